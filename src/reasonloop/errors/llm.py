"""Errors of a call to a model provider, one class per way it fails; those worth retrying say so
(``retryable``). Re-exported by :mod:`reasonloop.errors`."""

from __future__ import annotations

from typing import Any

from reasonloop.errors.base import ReasonLoopError

__all__ = [
    "LLMAuthError",
    "LLMBadRequest",
    "LLMBadResponse",
    "LLMError",
    "LLMNotConfigured",
    "LLMNotSupported",
    "LLMRateLimited",
    "LLMServerError",
    "LLMTimeout",
    "LLMToolSchemaRejected",
    "LLMUnreachable",
]


class LLMError(ReasonLoopError):
    """A provider call failed. ``status_code`` is set when an HTTP status was seen."""

    code = "llm.error"

    def __init__(self, message: str, *, status_code: int | None = None, **details: Any) -> None:
        super().__init__(message, status_code=status_code, **details)
        self.status_code = status_code


class LLMNotConfigured(LLMError):
    code = "llm.not_configured"


class LLMAuthError(LLMError):
    code = "llm.auth"


class LLMRateLimited(LLMError):
    code = "llm.rate_limited"
    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **details: Any) -> None:
        super().__init__(message, retry_after=retry_after, **details)
        self.retry_after = retry_after


class LLMUnreachable(LLMError):
    code = "llm.unreachable"
    retryable = True


class LLMTimeout(LLMError):
    code = "llm.timeout"
    retryable = True


class LLMServerError(LLMError):
    code = "llm.server_error"
    retryable = True


class LLMBadRequest(LLMError):
    code = "llm.bad_request"


class LLMToolSchemaRejected(LLMBadRequest):
    code = "llm.tool_schema_rejected"


class LLMNotSupported(LLMError):
    """The provider cannot do what was asked (for example score continuations)."""

    code = "llm.not_supported"


class LLMBadResponse(LLMError):
    """The provider answered with something we cannot parse (malformed chunk, cut stream)."""

    code = "llm.bad_response"
