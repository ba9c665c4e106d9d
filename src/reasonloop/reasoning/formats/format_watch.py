"""Noticing a model that does not follow a strategy's format, instead of guessing at its replies.

A strategy reports each model turn to a :class:`FormatWatch` as readable or not (a ReAct turn
naming no tool, a tool call that is not JSON, an empty reply). :data:`UNREADABLE_LIMIT`
unreadable turns in a row end the run with :class:`~reasonloop.errors.FormatNotFollowed`,
whose message says so in plain words and names a strategy the model can run: native tool
calls for a model that has them and fails the text format, the text format for a model whose
tool calls cannot be read, and ``qa`` (one answer, no format) otherwise.
"""

from __future__ import annotations

from reasonloop.errors import FormatNotFollowed
from reasonloop.llm.base import LLM

__all__ = ["UNREADABLE_LIMIT", "FormatWatch", "format_error", "suggestion"]

UNREADABLE_LIMIT = 3
"""Unreadable turns in a row that end a run: one may be a slip, three are the model's habit."""

_WHY = {
    "toolcall": "which uses the model's native tool calls instead of a text format",
    "react": "which asks for tools in plain text (Thought / Action / Action Input)",
    "qa": "which needs no format: it searches the documents and answers in one step",
}


def suggestion(strategy: str, llm: LLM) -> str:
    """A strategy ``llm`` can run when it cannot follow ``strategy``'s format."""
    if strategy == "toolcall":
        return "react"
    return "toolcall" if llm.capabilities.native_tools else "qa"


def format_error(strategy: str, llm: LLM, what: str, problem: str) -> FormatNotFollowed:
    """The run's error: ``what`` went wrong (a sentence), the last ``problem``, and the way out."""
    other = suggestion(strategy, llm)
    return FormatNotFollowed(
        f"The model {llm.name} {what} (the last problem: {problem}). "
        f"Try the {other} strategy (--reasoning {other}), {_WHY[other]}, or a model that follows instructions.",
        strategy=strategy,
        model=llm.name,
        problem=problem,
        suggestion=other,
    )


class FormatWatch:
    """Counts a model's unreadable turns in a row for one run of ``strategy``.

    Example::

        watch = FormatWatch("react", llm)
        watch.unreadable("the Action line names no tool")  # raises on the third in a row
        watch.readable()                                    # starts the count again
    """

    __slots__ = ("_llm", "_strategy", "in_a_row")

    def __init__(self, strategy: str, llm: LLM) -> None:
        self._strategy, self._llm = strategy, llm
        self.in_a_row = 0

    def readable(self) -> None:
        self.in_a_row = 0

    def unreadable(self, problem: str) -> None:
        """Count one unreadable turn.

        Raises:
            FormatNotFollowed: it is the :data:`UNREADABLE_LIMIT`-th in a row.
        """
        self.in_a_row += 1
        if self.in_a_row >= UNREADABLE_LIMIT:
            what = f"did not follow the {self._strategy} format: {self.in_a_row} replies in a row could not be read"
            raise format_error(self._strategy, self._llm, what, problem)
