"""One place that turns reasonloop errors into HTTP responses.

Handlers are looked up along the exception's class hierarchy, so a new subclass gets its
parent's status. Bodies are ``{"error": {"code", "message", ...details}}`` (the shape
OpenAI clients read); a 422 also carries FastAPI's ``detail`` list naming the field. A request
FastAPI itself finds invalid (a body field of the wrong type or out of range) gets the same
shape, its ``error`` naming the first invalid field.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from reasonloop.errors import (
    ApprovalAnswered,
    ApprovalNotFound,
    AuthError,
    ConfigError,
    ConversationBusy,
    ConversationNotFound,
    CrossSiteRefused,
    DocumentNotFound,
    KBError,
    KBUnavailable,
    LLMError,
    MethodNotAllowed,
    PluginNotFound,
    RateLimited,
    ReasonLoopError,
    RequestInvalid,
    RequestNotFound,
    RunFinished,
    RunNotFound,
    RunQueueFull,
    RunStoreUnavailable,
    UploadTooLarge,
)

__all__ = ["INTERNAL", "error_response", "install_error_handlers", "invalid_request", "status_for"]

INTERNAL = "server.internal"
"""The code of a failure nobody foresaw (a defect, logged with its traceback)."""

_STATUS: list[tuple[type[ReasonLoopError], int]] = [
    (RunNotFound, 404),
    (ConversationNotFound, 404),
    (DocumentNotFound, 404),
    (UploadTooLarge, 413),
    (KBUnavailable, 503),
    (PluginNotFound, 404),
    (RunFinished, 409),
    (ApprovalNotFound, 404),
    (ApprovalAnswered, 409),
    (ConversationBusy, 409),
    (RequestNotFound, 404),
    (MethodNotAllowed, 405),
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


def invalid_request(
    problems: Sequence[Any], *, content_type: str | None = None, skip: tuple[str, ...] = ()
) -> RequestInvalid:
    """The :class:`RequestInvalid` of a request pydantic refused, naming its first invalid field.

    Args:
        problems: pydantic's errors (``ValidationError.errors()``), the first one reported.
        content_type: The request's ``Content-Type``, when the problem may be a body sent as something else than JSON.
        skip: Leading parts of an error's location that name no field (``"body"``, ``"query"``...).
    """
    first = problems[0] if problems else {"loc": (), "msg": "invalid request"}
    loc = [str(part) for part in first.get("loc", ())]
    while loc and loc[0] in skip:
        loc = loc[1:]
    field = ".".join(loc)
    kind = first.get("type", "")
    if kind == "json_invalid":
        reason = str((first.get("ctx") or {}).get("error") or "it cannot be parsed")
        return RequestInvalid(f"the body is not valid JSON: {reason}", field="")
    if not field and kind == "missing" and content_type is not None:
        return RequestInvalid("the body is missing: send a JSON object", field="")
    if not field and kind == "model_attributes_type" and content_type is not None:
        if "json" not in content_type.lower():
            shown = content_type or "none"
            return RequestInvalid(f"the body must be a JSON object sent as application/json (got {shown})", field="")
        return RequestInvalid("the body must be a JSON object", field="")
    message = str(first.get("msg", "invalid"))
    message = message.removeprefix("Value error, ")  # a validator's own words, without pydantic's label
    return RequestInvalid(f"{field}: {message}" if field else message, field=field)


def invalid_arguments(exc: ValidationError) -> RequestInvalid:
    """The :class:`RequestInvalid` of arguments (a WebSocket frame, an MCP tool call) pydantic refused."""
    return invalid_request(exc.errors(include_url=False))


def install_error_handlers(app: FastAPI) -> None:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ReasonLoopError)
        return error_response(exc)

    app.add_exception_handler(ReasonLoopError, handle)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _crashed)


async def _invalid_request(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 (its ``detail`` list as it is) with an ``error`` naming the first invalid field."""
    assert isinstance(exc, RequestValidationError)
    problems = list(exc.errors())
    error = invalid_request(
        problems, content_type=request.headers.get("content-type", ""), skip=("body", "query", "path", "header")
    )
    body = {"error": {**error.to_dict(), "type": error.code}, "detail": jsonable_encoder(problems)}
    return ErrorJSON(body, status_code=422)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """Starlette's own refusals (no such path, a method the path does not take) in our shape."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        error: ReasonLoopError = RequestNotFound(f"no such path: {request.url.path}", path=request.url.path)
    elif exc.status_code == 405:
        error = MethodNotAllowed(
            f"{request.method} is not allowed on {request.url.path}", path=request.url.path, method=request.method
        )
    else:
        error = RequestInvalid(str(exc.detail))
    body = {"error": {**error.to_dict(), "type": error.code}}
    return ErrorJSON(body, status_code=exc.status_code, headers=exc.headers)


async def _crashed(request: Request, exc: Exception) -> JSONResponse:
    """A failure nobody foresaw (a defect): a 500 in the same shape, its traceback in the server's
    log only (the server logs it once this response is sent)."""
    body = {
        "error": {
            "code": INTERNAL,
            "message": "the server failed to answer this request; its log has the details",
            "type": INTERNAL,
        }
    }
    return ErrorJSON(body, status_code=500)
