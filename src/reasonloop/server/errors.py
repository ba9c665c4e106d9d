"""One place that turns reasonloop errors into HTTP responses.

Handlers are looked up along the exception's class hierarchy, so a new subclass gets its
parent's status. Bodies are ``{"error": {"code", "message", ...details}}`` (the shape
OpenAI clients read); a 422 also carries FastAPI's ``detail`` list naming the field. A request
FastAPI itself finds invalid (a body field of the wrong type or out of range) gets the same
shape, its ``error`` naming the first invalid field.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from reasonloop.errors import (
    AuthError,
    ConfigError,
    ConversationBusy,
    ConversationNotFound,
    CrossSiteRefused,
    DocumentNotFound,
    KBError,
    KBUnavailable,
    LLMError,
    PluginNotFound,
    RateLimited,
    ReasonLoopError,
    RequestInvalid,
    RunFinished,
    RunNotFound,
    RunQueueFull,
    RunStoreUnavailable,
    UploadTooLarge,
)

__all__ = ["error_response", "install_error_handlers", "status_for"]

_STATUS: list[tuple[type[ReasonLoopError], int]] = [
    (RunNotFound, 404),
    (ConversationNotFound, 404),
    (DocumentNotFound, 404),
    (UploadTooLarge, 413),
    (KBUnavailable, 503),
    (PluginNotFound, 404),
    (RunFinished, 409),
    (ConversationBusy, 409),
    (RequestInvalid, 422),
    (AuthError, 401),
    (CrossSiteRefused, 403),
    (RateLimited, 429),
    (RunQueueFull, 503),
    (RunStoreUnavailable, 503),
    (LLMError, 502),
    (ConfigError, 500),
    (KBError, 500),
]


def status_for(exc: ReasonLoopError) -> int:
    """The HTTP status of an error: the first entry along its class hierarchy, else 500."""
    for cls in type(exc).__mro__:
        for known, status in _STATUS:
            if cls is known:
                return status
    return 500


class ErrorJSON(JSONResponse):
    """JSON that always encodes: the text of an error may quote what a client sent, lone
    surrogates included (see :mod:`reasonloop.unicode_text`), which only escaped JSON can carry."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, separators=(",", ":")).encode("ascii")


def error_response(exc: ReasonLoopError) -> JSONResponse:
    """The JSON response for ``exc`` (with Retry-After for rate limits and a full queue)."""
    status = status_for(exc)
    body: dict[str, Any] = {"error": {**exc.to_dict(), "type": exc.code}}
    headers: dict[str, str] = {}
    if isinstance(exc, RequestInvalid):
        field = str(exc.details.get("field") or "")
        body["detail"] = [{"loc": ["body", *field.split(".")], "msg": exc.message, "type": exc.code}]
    if isinstance(exc, RateLimited):
        headers["Retry-After"] = str(exc.details.get("retry_after", 1))
    elif isinstance(exc, RunQueueFull | RunStoreUnavailable):
        headers["Retry-After"] = "1"
    if isinstance(exc, AuthError) and not isinstance(exc, CrossSiteRefused):  # no key would help
        headers["WWW-Authenticate"] = "Bearer"
    return ErrorJSON(body, status_code=status, headers=headers)


def install_error_handlers(app: FastAPI) -> None:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ReasonLoopError)
        return error_response(exc)

    app.add_exception_handler(ReasonLoopError, handle)
    app.add_exception_handler(RequestValidationError, _invalid_request)


async def _invalid_request(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 (its ``detail`` list as it is) with an ``error`` naming the first invalid field."""
    assert isinstance(exc, RequestValidationError)
    problems = list(exc.errors())
    first = problems[0] if problems else {"loc": (), "msg": "invalid request"}
    loc = [str(part) for part in first.get("loc", ())]
    field = ".".join(loc[1:] if loc and loc[0] in ("body", "query", "path", "header") else loc)
    message = f"{field}: {first.get('msg', 'invalid')}" if field else str(first.get("msg", "invalid request"))
    error = RequestInvalid(message, field=field)
    body = {"error": {**error.to_dict(), "type": error.code}, "detail": jsonable_encoder(problems)}
    return ErrorJSON(body, status_code=422)
