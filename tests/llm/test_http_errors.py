"""The shared edge of the HTTP providers: key lookup, Retry-After, status classification."""

from __future__ import annotations

import email.utils
import time

import pytest

from reasonloop.config import LLMSettings
from reasonloop.errors import LLMNotConfigured
from reasonloop.llm.http_errors import api_key, error_for_status, parse_retry_after


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_retry_after_seconds(headers: dict[str, str] | None, expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_retry_after_http_date() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    delay = parse_retry_after({"retry-after": when})
    assert delay is not None and 25 <= delay <= 31


@pytest.mark.parametrize(
    ("status", "message", "code"),
    [
        (401, "bad key", "llm.auth"),
        (403, "forbidden", "llm.auth"),
        (429, "slow down", "llm.rate_limited"),
        (400, "Invalid schema for function 'f'", "llm.tool_schema_rejected"),
        (400, "tools[0].input_schema: unsupported keyword", "llm.tool_schema_rejected"),
        (400, "prompt is too long", "llm.bad_request"),
        (404, "model not found", "llm.bad_request"),
        (422, "unprocessable", "llm.bad_request"),
        (408, "request timeout", "llm.timeout"),
        (500, "boom", "llm.server_error"),
        (529, "overloaded", "llm.server_error"),
    ],
)
def test_status_classification(status: int, message: str, code: str) -> None:
    error = error_for_status(status, message, provider="p", headers={"retry-after": "3"})
    assert error.code == code and error.status_code == status
    assert message in error.message
    if code == "llm.rate_limited":
        assert error.retry_after == 3.0  # type: ignore[attr-defined]


def test_key_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VENDOR_KEY", "k1")
    monkeypatch.setenv("MY_KEY", "k2")
    monkeypatch.delenv("UNSET_KEY", raising=False)
    assert api_key(LLMSettings(), "p", "VENDOR_KEY") == "k1"
    assert api_key(LLMSettings(api_key_env="MY_KEY", base_url="http://h"), "p", "VENDOR_KEY") == "k2"
    # A custom endpoint without a named variable gets no key (the vendor key is not sent to it).
    assert api_key(LLMSettings(base_url="http://127.0.0.1:8080/v1"), "p", "VENDOR_KEY") is None
    with pytest.raises(LLMNotConfigured, match="UNSET_KEY") as info:
        api_key(LLMSettings(api_key_env="UNSET_KEY", base_url="http://h"), "p", "VENDOR_KEY")
    assert info.value.details["variable"] == "UNSET_KEY"
