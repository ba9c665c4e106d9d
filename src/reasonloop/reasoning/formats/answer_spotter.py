"""Finding a ReAct answer inside a stream of text as it arrives, so its tokens stream live.

:class:`AnswerSpotter` passes on only the text after ``Final Answer:`` (or, for a forced
answer, the whole text unless it starts like a ReAct turn, thinking or a call).
"""

from __future__ import annotations

import re

__all__ = ["FINAL_LABEL", "AnswerSpotter"]

FINAL_LABEL = re.compile(r"(?:final[ _]?answer|最终答案|最终回答)\s*(?:\*\*)?\s*[:：](?:\*\*)?[ \t]*", re.I)
"""``Final Answer:`` and its Chinese forms, wherever it stands."""
_LEAD = re.compile(r"^\s*(?:\*\*)?\s*(thought|action|final|思考|行动|最终|answer|答案|```|<|\{|do i need)", re.I)


class AnswerSpotter:
    """Picks the answer out of streamed text, chunk by chunk.

    Args:
        direct: The text is the answer unless it starts like a ReAct turn (forced
            answers); otherwise the answer starts after ``Final Answer:``.
    """

    __slots__ = ("_buf", "_direct", "_scanned", "_sent", "_start")

    def __init__(self, direct: bool = False) -> None:
        self._buf = ""
        self._direct = direct
        self._start: int | None = None
        self._sent = 0
        self._scanned = 0

    @property
    def head(self) -> str:
        """The text before the answer (once the answer has started)."""
        return self._buf[: self._start] if self._start is not None else ""

    def feed(self, chunk: str) -> str:
        """The part of ``chunk`` (and of what was held back) that is answer text."""
        self._buf += chunk
        if self._start is None:
            m = FINAL_LABEL.search(self._buf, max(0, self._scanned - 24))
            self._scanned = len(self._buf)
            if m:
                self._start = m.end()
            elif self._direct:
                head = self._buf.lstrip()
                if len(head) < 16 and "\n" not in head:
                    return ""
                if _LEAD.match(head):
                    self._direct = False
                    return ""
                self._start = 0
            else:
                return ""
        out = self._buf[self._start + self._sent :]
        if not self._sent:
            stripped = out.lstrip()
            self._start += len(out) - len(stripped)
            out = stripped
        self._sent += len(out)
        return out
