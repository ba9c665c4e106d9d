"""The root of every error reasonloop raises on purpose: a stable ``code``, a message for people,
structured ``details`` and their JSON form. Its own module so that each family of errors in this package
(``llm``, ``runs``, ...) can derive from it while :mod:`reasonloop.errors` gathers them all."""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["ReasonLoopError"]


class ReasonLoopError(Exception):
    """Root of every error reasonloop raises on purpose.

    Args:
        message: One line for people.
        **details: Structured context (key names, ids, status codes) kept on ``details``.
    """

    code: ClassVar[str] = "reasonloop.error"
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """The error as JSON-ready data: ``{"code", "message", **details}``."""
        return {"code": self.code, "message": self.message, **self.details}
