"""The fallback rule of the router: how much searching a question needs, read from its form alone.

Used when the model gives no readable decision (or is not asked: a budget too small for the
call). It reads general features of a question, in English and Chinese, and says which it saw:

- **none**: small talk, thanks, translation, creative writing (:func:`~reasonloop.reasoning.steps.intent.needs_no_retrieval`
  and a short greeting that goes on), plain arithmetic, and remarks on the assistant's own previous answer;
- **research**: a request for a report, briefing, survey or investigation, or for an analysis
  (causes, themes, trends, a comparison) over *all* or *every* document of a kind, or a long
  request of several clauses;
- **multi_hop**: a comparison of two named things (``A or B``, ``which … first``, ``哪个更``, ``还是``,
  ``相比``, ``一致``) or a bridge (a thing named by a relative clause: ``the team that owns …``,
  ``负责…的团队的经理``);
- **single** otherwise: one search answers it.

The features are written for questions over a user's documents in general, not for one data set.
"""

from __future__ import annotations

import re

from reasonloop.events import RouteName
from reasonloop.reasoning.formats.language import detect_language
from reasonloop.reasoning.steps.intent import needs_no_retrieval

__all__ = ["rule_route"]

_GREETING_START = re.compile(
    r"^\s*(?:hi|hello|hey|good (?:morning|afternoon|evening)|thanks?|thank you|bye|"
    r"你好|您好|嗨|谢谢|多谢|再见|早上好|晚上好)\b[\s!.,，。！、]",
    re.I,
)
_CHAT_TASK = re.compile(
    r"\bhow (?:do|would) you say\b|\btell me (?:a|an) (?:\w+ ){0,3}(?:story|joke|poem|riddle)\b|"
    r"用.{1,6}(?:语|文)怎么说|讲(?:一个|个).{0,20}(?:故事|笑话)",
    re.I,
)
_ARITHMETIC = re.compile(
    r"\d+(?:\.\d+)?\s*(?:[-+*/×÷^]|times|plus|minus|divided by|multiplied by|乘以|乘|加上?|减去?|除以)\s*\d",
    re.I,
)
_OWN_ANSWER = re.compile(
    r"\b(?:(?:your|that|the|this|my) (?:last |previous |earlier )?(?:answer|reply|response)"
    r"(?: you (?:just )?gave)?)\b.{0,60}\b(?:wrong|right|incorrect|correct|useless|helpful|accurate|good|great|bad|"
    r"ignored|cited nothing)|\b(?:thumbs (?:up|down)|mark it as (?:good|bad))\b|"
    r"(?:刚才|上一个|上个|这个|你的)(?:的)?(?:回答|答复)|答非所问|好评|差评",
    re.I,
)
_RESEARCH_STRONG = re.compile(
    r"\b(?:write|prepare|produce|draft|compile|give me)\s+(?:me\s+)?(?:a|an)\s+(?:[\w-]+\s+){0,2}?"
    r"(?:report|briefing|memo|white ?paper|survey)\b|\breport on\b|"
    r"\b(?:investigate|investigation|in-depth|comprehensive|thorough(?:ly)?|literature review|research)\b|"
    r"(?:写|出|做|形成|整理)(?:一份|一篇|个)[^，。？?]{0,12}(?:报告|简报|综述)|调研|综述|全面|深入研究|系统(?:地|性)?分析",
    re.I,
)
_SCOPE_ALL = re.compile(r"\b(?:all|every|each|across|throughout)\b|所有|全部|每[一个份项条]|各[个项]|通读", re.I)
_ANALYSIS = re.compile(
    r"\b(?:analy[sz]e|analysis|review|compare|comparison|themes?|causes?|trends?|patterns?|recommendations?|"
    r"evaluate|assess)\b|分析|比较|归纳|原因|趋势|规律|建议|评估",
    re.I,
)
_COMPARISON = re.compile(
    r"\bwhich\b[^?]{0,80}\b(?:first|earlier|later|older|newer|longer|shorter|larger|bigger|smaller|higher|lower|"
    r"more|less|fewer|cheaper)\b|\b(?:before or after|compared (?:to|with)|difference between|"
    r"differ|both|the same|agree|than)\b|"
    r"哪(?:个|一个|一份|家|位)?[^？?]{0,10}(?:更|先|早|晚|多|少|长|短|大|小)|还是|相比|比较|一致|同一|都是",
    re.I,
)
_OPTIONS = re.compile(r"\b(?:which|who|what|is|was|are|were|did|does)\b[^?]{3,}\bor\b", re.I)
_BRIDGE_EN = re.compile(
    r"\b(?:the|a|an|our|their|this|that)\s+(?:[\w-]+\s+){0,3}?(?:who|that|which|whose)\s+(?!is\b|are\b)[\w-]+|"
    r"\b(?:author|owner|manager|head|founder|supplier|vendor|maker|writer)\s+of\s+the\b",
    re.I,
)
_BRIDGE_ZH = re.compile(r"的那(?:个|位|家|份|些)|的[^，。？?的]{1,12}的|^[^，。？?]{4,}的[^，。？?的]{1,6}[，,]")
_CLAUSES = re.compile(r"[,;:，；：、]|\band\b|\bwith\b|\bthen\b|并且?|以及|然后")


def _length(question: str, language: str) -> int:
    """Words in an English question, characters over two in a Chinese one (about one word each)."""
    if language == "zh":
        return len(re.sub(r"\s", "", question)) // 2
    return len(question.split())


def rule_route(question: str) -> tuple[RouteName, str]:
    """The route the form of ``question`` calls for, and the features that decided it."""
    text = " ".join(question.split())
    language = detect_language(text)
    words = _length(text, language)
    if needs_no_retrieval(text) or (_GREETING_START.match(text) and words <= 8) or _CHAT_TASK.search(text):
        return "none", "small talk, translation or writing: nothing to look up"
    if _ARITHMETIC.search(text) and words <= 16:
        return "none", "arithmetic: nothing to look up"
    if _OWN_ANSWER.search(text):
        return "none", "a remark on the previous answer, not a question about the documents"
    strong = _RESEARCH_STRONG.search(text)
    if strong:
        return "research", f"asks for research ({strong.group(0)!r})"
    scope, analysis = _SCOPE_ALL.search(text), _ANALYSIS.search(text)
    if scope and analysis:
        return "research", f"an analysis ({analysis.group(0)!r}) over {scope.group(0)!r} documents"
    clauses = len(_CLAUSES.findall(text))
    if words >= 28 and clauses >= 3:
        return "research", f"a long request of {clauses + 1} parts"
    comparison = _COMPARISON.search(text) or (_OPTIONS.search(text) if language != "zh" else None)
    if comparison:
        return "multi_hop", f"compares ({comparison.group(0).strip()!r}): each side is its own search"
    bridge = (_BRIDGE_ZH if language == "zh" else _BRIDGE_EN).search(text)
    if bridge:
        return "multi_hop", f"a bridge ({bridge.group(0).strip()!r}): find that first, then ask about it"
    return "single", "one thing asked about one subject: one search"
