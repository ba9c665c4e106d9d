"""Cheap recognition of messages that need no retrieval: greetings, small talk, translation, writing.

Strategies that always retrieve (qa, decompose, rewoo) answer these directly instead; the
loop strategies are told in their prompts. The patterns are deliberately narrow: a miss
costs one retrieval, a false hit would skip the documents.
"""

from __future__ import annotations

import re

__all__ = ["needs_no_retrieval"]

_SMALL_TALK = re.compile(
    r"^\s*(?:hi|hello|hey|yo|good (?:morning|afternoon|evening)|thanks?(?: you)?|thank you(?: very much)?|"
    r"how are you(?: doing)?|bye|goodbye|see you|ok(?:ay)?|cool|great|nice|"
    r"你好|您好|嗨|谢谢|多谢|再见|早上好|晚上好|你好吗|好的)[\s!.?,，。！？~]*$",
    re.I,
)
_TASK = re.compile(
    r"^\s*(?:please\s+)?(?:translate|write (?:me )?(?:a |an )?(?:poem|story|haiku|limerick|song|joke)|"
    r"tell me a joke|compose a (?:poem|song)|翻译|把.{1,40}翻译成|写一首|写一个(?:故事|笑话)|讲个笑话)",
    re.I,
)


def needs_no_retrieval(question: str) -> bool:
    """True for greetings, thanks, small talk, translation requests and creative writing."""
    return bool(_SMALL_TALK.match(question) or _TASK.match(question))
