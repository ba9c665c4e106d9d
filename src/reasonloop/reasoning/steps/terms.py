"""What a question is about, in words a passage can be checked for: its names and codes, its
content words, and whether it is negated.

These checks only ever make an answer *less* confident: a question whose names (a product code,
a person, a place) no retrieved passage contains is one the documents do not answer; a
sentence that negates what the question asserts can never support a "yes". They decide
nothing by themselves.

English words are compared by a rough stem (lower case, possessive and plural ``s`` dropped, the
first five letters); Chinese text by character pairs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["STOP_WORDS", "QuestionTerms", "negates", "question_terms"]

_LATIN_WORD = re.compile(r"[A-Za-z0-9\u00c0-\u024f][A-Za-z0-9_\-\u00c0-\u024f]*(?:'[a-z]+)?")
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_STOP = {
    *("the", "a", "an", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or", "as", "into"),
    *("is", "are", "was", "were", "be", "been", "being", "do", "does", "did", "has", "have", "had", "can"),
    *("could", "will", "would", "should", "shall", "may", "might", "must", "which", "who", "whom", "whose"),
    *("what", "where", "when", "why", "how", "both", "also", "either", "than", "then", "there", "here"),
    *("it", "its", "their", "his", "her", "they", "them", "one", "that", "this", "these", "those", "i", "me"),
    *("my", "we", "our", "you", "your", "any", "all", "some", "much", "many", "more", "most", "about"),
    *("after", "before", "if", "so", "not", "no", "yes", "get", "got", "there", "tell", "please", "know"),
    *("does", "doesn't", "isn't", "aren't", "don't", "can't", "won't", "still", "just", "only", "ever"),
    *("long", "often", "use", "used", "need", "needs", "want", "like", "other", "same", "and", "per"),
}
_STOP_ZH = {
    *("是否", "是不", "不是", "什么", "多少", "哪些", "哪个", "哪里", "哪儿", "怎么", "如何", "为什", "么呢"),
    *("可以", "能否", "能不", "不能", "会不", "不会", "有没", "没有", "请问", "我们", "你们", "他们", "这个"),
    *("那个", "一个", "的是", "是什", "吗？", "了吗", "的吗", "是谁", "谁是", "有哪", "几个", "多久", "几天"),
    *("吗", "呢", "吧", "的", "了", "是", "么", "啊", "在", "和", "与", "或", "还"),
}
_CLAUSE_START = ".:;!?\"'“‘(—-"
STOP_WORDS = frozenset(_STOP)
"""English words that say nothing of a question's subject."""
_NEGATION = re.compile(
    r"\b(not|no|never|none|nobody|nothing|neither|nor|cannot|without|except|excluding|excluded|unsupported"
    r"|unavailable|invalid|ineligible|prohibited|forbidden|void)\b|n't\b|不|没|无|非|未|禁止|勿|否",
    re.I,
)


_IRREGULAR = {
    past: base
    for base, forms in {
        "lead": "led",
        "pay": "paid",
        "buy": "bought",
        "sell": "sold",
        "make": "made",
        "hold": "held",
        "take": "took taken",
        "give": "gave given",
        "go": "went gone",
        "begin": "began begun",
        "run": "ran",
        "win": "won",
        "build": "built",
        "keep": "kept",
        "leave": "left",
        "meet": "met",
        "send": "sent",
        "spend": "spent",
        "tell": "told",
        "think": "thought",
        "find": "found",
        "bring": "brought",
        "write": "wrote written",
        "choose": "chose chosen",
        "drive": "drove driven",
        "fly": "flew flown",
        "grow": "grew grown",
        "know": "knew known",
        "see": "saw seen",
        "speak": "spoke spoken",
        "stand": "stood",
        "teach": "taught",
        "become": "became",
        "feel": "felt",
        "lose": "lost",
        "mean": "meant",
        "say": "said",
        "sit": "sat",
        "wear": "wore worn",
        "fall": "fell fallen",
        "fight": "fought",
        "ride": "rode ridden",
        "rise": "rose risen",
        "show": "shown",
        "break": "broke broken",
        "get": "got gotten",
        "lend": "lent",
        "bear": "bore borne",
        "draw": "drew drawn",
        "eat": "ate eaten",
        "drink": "drank drunk",
        "forget": "forgot forgotten",
        "freeze": "froze frozen",
        "steal": "stole stolen",
        "light": "lit",
        "feed": "fed",
        "deal": "dealt",
    }.items()
    for past in forms.split()
}
"""Past forms of irregular English verbs, read as their base ("led" is a form of "lead")."""


def _bare(word: str) -> str:
    """``word`` in lower case without a possessive or plural ``s``, an irregular past as its base."""
    word = word.lower()
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def _stem(word: str) -> str:
    return _bare(word)[:5]


def _same_word(stem: str, word: str) -> bool:
    """Whether a text ``word`` (bare) is a form of the question's ``stem`` ("own": "owned", "owner")."""
    return word.startswith(stem) or (len(word) >= 3 and stem.startswith(word))


def _pairs(text: str) -> set[str]:
    out: set[str] = set()
    for run in _HAN_RUN.findall(text):
        out.update(run[i : i + 2] for i in range(len(run) - 1))
        if len(run) == 1:
            out.add(run)
    return out


def negates(text: str) -> bool:
    """Whether ``text`` holds a negation ("not", "never", "cannot", "n't", 不, 没, 无 …)."""
    return bool(_NEGATION.search(text))


@dataclass
class QuestionTerms:
    """The checkable terms of one question."""

    question: str = ""
    words: set[str] = field(default_factory=set)
    """Stems of its content words, and its Chinese character pairs."""
    names: list[str] = field(default_factory=list)
    """Names and codes it contains ("X200", "Linux", "Maria Lopez"): what it is about."""
    negated: bool = False

    @property
    def empty(self) -> bool:
        return not self.words and not self.names

    def _found(self, text: str) -> set[str]:
        words = {_bare(w) for w in _LATIN_WORD.findall(text) if w.lower() not in _STOP}
        pairs = _pairs(text)
        return {w for w in self.words if w in pairs or any(_same_word(w, t) for t in words)}

    def coverage(self, text: str) -> float:
        """Share of the question's content words that ``text`` contains (0 to 1)."""
        return len(self._found(text)) / len(self.words) if self.words else 0.0

    def mentions(self, text: str) -> bool:
        """Whether ``text`` contains at least one of the question's content words or names."""
        return bool(self._found(text)) or any(_has_name(text, n) for n in self.names)

    def missing_names(self, text: str) -> list[str]:
        """The question's names that ``text`` does not contain."""
        return [n for n in self.names if not _has_name(text, n)]

    def names_elsewhere(self, text: str) -> list[str]:
        """The question's names that ``text`` holds only inside a longer name ("Aria 2" only as
        "Aria 2 Pro", "Halo" only as "Halo Max"): there it speaks of another thing. A name followed
        by another of the question's names ("Maria" in "Maria Okafor") is not inside a longer one."""
        known = {w.lower() for n in self.names for w in n.split()}
        return [n for n in self.names if _has_name(text, n) and not _has_exact_name(text, n, known)]

    def unmentioned_words(self, text: str) -> list[str]:
        """The question's English content words (as stems) that ``text`` holds in no form.

        Chinese words are not checked: without word boundaries a character pair of the question
        is too often a different word of the text."""
        found = self._found(text)
        return sorted(w for w in self.words if w[:1].isascii() and w not in found)


def _has_name(text: str, name: str) -> bool:
    low = " ".join(text.lower().split())
    name = " ".join(name.lower().split())
    return name in low or (name.endswith("s") and name[:-1] in low)


_NEXT_NAME_WORD = re.compile(r"[ \t]+([A-Z0-9][\w+]*)")


def _has_exact_name(text: str, name: str, known: frozenset[str] | set[str] = frozenset()) -> bool:
    """Whether ``name`` occurs in ``text`` not followed by more of a name (a capitalised word or a
    number that is not one of the ``known`` words)."""
    pattern = r"(?<![\w])" + r"\s+".join(re.escape(w) for w in name.split()) + r"s?(?![\w+])"
    for m in re.finditer(pattern, text, re.I if name.islower() else 0):
        more = _NEXT_NAME_WORD.match(text, m.end())
        if more is None or more.group(1).lower() in known:
            return True
    return False


def _names(question: str) -> list[str]:
    """Codes (words with a digit) anywhere, and capitalised words that do not start the question
    or a clause in it (runs kept together), but not all-capital abbreviations a document may
    spell out ("CEO", "HR")."""
    names: list[str] = []
    run: list[str] = []
    last = 0
    for m in _LATIN_WORD.finditer(question):
        word = m.group()
        if run and question[last : m.start()].strip():  # words apart ("Google Play 下载 Tessaro") are two names
            names.append(" ".join(run))
            run = []
        last = m.end()
        bare = word[:-2] if word.endswith("'s") else word
        code = any(c.isdigit() for c in bare) and any(c.isalpha() for c in bare)
        if run and bare.isdigit():  # "Aria 3": a model number belongs to its name
            run.append(bare)
            continue
        before = question[: m.start()].rstrip()
        opens = not before or before[-1] in _CLAUSE_START  # a capital there starts a sentence or a clause
        proper = not opens and bare[:1].isupper() and not bare.isupper() and bare.lower() not in _STOP
        if code or proper:
            run.append(bare)
            continue
        if run:
            names.append(" ".join(run))
            run = []
    if run:
        names.append(" ".join(run))
    # each word of a two-word run is checked on its own ("Maria Lopez" may be written "Ms Lopez"),
    # but a name with a number or of three words is checked whole ("Aria 3" is not "Aria 2")
    out: list[str] = []
    for name in names:
        whole = any(w.isdigit() for w in name.split()) or len(name.split()) > 2  # "Halo Mini Max"
        out.extend([name] if whole else name.split())
    return list(dict.fromkeys(out))


def question_terms(question: str) -> QuestionTerms:
    """The names, content words and negation of ``question``."""
    words = {_stem(w) for w in _LATIN_WORD.findall(question) if w.lower() not in _STOP and len(w) > 2}
    words |= {p for p in _pairs(question) if p not in _STOP_ZH}
    return QuestionTerms(question=question, words=words, names=_names(question), negated=negates(question))
