"""Bad input on every HTTP surface gets an error in our words, with its code, and no traceback in the
server's log: REST (bodies that are not JSON, blank, huge or mistyped questions, unknown paths and
methods, bad query parameters, unknown ids), the WebSocket and the OpenAI-compatible route (through
the official ``openai`` SDK)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import openai
import pytest
from websockets.asyncio.client import connect

from reasonloop.agents import AgentRunner
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.server import create_app
from tests.server.helpers import make_settings, serve

pytestmark = pytest.mark.integration

LIMIT = 500
"""``[server] max_question_chars`` of these servers."""


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def no_traceback_logged() -> Iterator[None]:
    """Fail when the server logs an exception (uvicorn's loggers do not reach pytest's capture)."""
    handler = _Records()
    loggers = [logging.getLogger(), logging.getLogger("uvicorn"), logging.getLogger("uvicorn.error")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    crashes = [r for r in handler.records if r.exc_info or "Traceback" in r.getMessage()]
    assert crashes == [], [r.getMessage() for r in crashes]


@pytest.fixture
async def url(tmp_path):
    settings = make_settings(tmp_path, max_question_chars=LIMIT)
    app = create_app(settings, runner=AgentRunner(settings, llm=ScriptedProvider(replies=["ok"], repeat_last=True)))
    async with serve(app, settings) as base:
        with no_traceback_logged():  # once uvicorn has set up its loggers (which drops their handlers)
            yield base


def error_of(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and error["type"] == code, error
    return error


async def test_run_bodies_that_are_not_a_json_object(url):
    async with httpx.AsyncClient(base_url=url) as http:
        broken = await http.post("/v1/runs", content=b'{"question": ', headers={"content-type": "application/json"})
        assert error_of(broken, 422, "request.invalid")["message"].startswith("the body is not valid JSON: ")
        as_text = await http.post("/v1/runs", content=b'{"question": "q"}', headers={"content-type": "text/plain"})
        message = error_of(as_text, 422, "request.invalid")["message"]
        assert message == "the body must be a JSON object sent as application/json (got text/plain)"
        form = await http.post("/v1/runs", data={"question": "q"})
        assert "sent as application/json (got application/x-www-form-urlencoded)" in form.json()["error"]["message"]
        array = await http.post("/v1/runs", json=["q"])
        assert error_of(array, 422, "request.invalid")["message"] == "the body must be a JSON object"
        empty = await http.post("/v1/runs", headers={"content-type": "application/json"})
        assert error_of(empty, 422, "request.invalid")["message"] == "the body is missing: send a JSON object"
        assert (await http.get("/v1/runs")).json() == []  # nothing was started


async def test_run_questions_blank_mistyped_or_huge(url):
    async with httpx.AsyncClient(base_url=url) as http:
        for question, message in [
            ("", "question: the question is empty"),
            (" \n\t ", "question: the question is empty"),
            (42, "question: Input should be a valid string"),
            (None, "question: Input should be a valid string"),
            (["q"], "question: Input should be a valid string"),
            ("x" * (LIMIT + 1), f"question: the question has {LIMIT + 1} characters, over the limit of {LIMIT}"),
        ]:
            refused = await http.post("/v1/runs", json={"question": question})
            error = error_of(refused, 422, "request.invalid")
            assert error["message"].startswith(message) and error["field"] == "question", error
        assert (await http.post("/v1/runs", json={"question": "x" * LIMIT})).status_code == 201  # at the limit


async def test_unknown_paths_methods_ids_and_bad_query_parameters(url):
    async with httpx.AsyncClient(base_url=url) as http:
        nowhere = error_of(await http.get("/v1/nowhere"), 404, "request.not_found")
        assert nowhere["message"] == "no such path: /v1/nowhere"
        wrong = error_of(await http.get("/v1/chat/completions"), 405, "request.method_not_allowed")
        assert wrong["message"] == "GET is not allowed on /v1/chat/completions"
        for path in ("/v1/runs/run_nope", "/v1/runs/run_nope/events"):
            error_of(await http.get(path), 404, "run.not_found")
        error_of(await http.post("/v1/runs/run_nope/stop"), 404, "run.not_found")
        for path, field in [
            ("/v1/runs?limit=many", "limit"),
            ("/v1/runs?limit=0", "limit"),
            ("/v1/runs/run_nope/events?after=-1", "after"),
            ("/v1/kb/search?q=x&top_k=abc", "top_k"),
            ("/v1/kb/search?q=x&mode=psychic", "mode"),
            ("/v1/kb/search", "q"),
            ("/v1/kb/search?q=%20%20", "q"),
            (f"/v1/kb/search?q={'x' * (LIMIT + 1)}", "q"),
        ]:
            error = error_of(await http.get(path), 422, "request.invalid")
            assert error["field"] == field and error["message"].startswith(f"{field}: "), (path, error)


async def test_websocket_asks_blank_mistyped_or_huge(url):
    async with connect(url.replace("http", "ws") + "/v1/ws") as ws:
        for n, (question, message) in enumerate(
            [
                ("", "question: the question is empty"),
                ("   ", "question: the question is empty"),
                (7, "question: Input should be a valid string"),
                ("x" * (LIMIT + 1), f"question: the question has {LIMIT + 1} characters"),
            ]
        ):
            await ws.send(json.dumps({"type": "ask", "id": n, "question": question}))
            while (frame := json.loads(await ws.recv()))["type"] == "heartbeat":
                pass
            assert frame["type"] == "error" and frame["id"] == n, frame
            assert frame["code"] == "request.invalid" and frame["field"] == "question", frame
            assert frame["message"].startswith(message), frame
        await ws.send('{"type": "ask", "question": ')
        frame = json.loads(await ws.recv())
        assert frame["code"] == "ws.malformed" and frame["message"].startswith("frame is not JSON")


async def test_openai_route_through_the_sdk(url):
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
    try:
        for messages, field in [
            ([{"role": "user", "content": ""}], "messages"),
            ([{"role": "user", "content": "  "}], "messages"),
            ([{"role": "user", "content": "x" * (LIMIT + 1)}], "messages"),
            ([{"role": "user", "content": 5}], "messages.0.content.str"),
            ([], "messages"),
        ]:
            for stream in (False, True):
                with pytest.raises(openai.UnprocessableEntityError) as refused:
                    await client.chat.completions.create(model="reasonloop", messages=messages, stream=stream)
                error = refused.value.body
                assert error["code"] == "request.invalid" and error["field"] == field, error
        with pytest.raises(openai.NotFoundError) as unknown:
            await client.chat.completions.create(model="telepathy", messages=[{"role": "user", "content": "q"}])
        assert unknown.value.body["code"] == "model.not_found"
    finally:
        await client.close()


class _BrokenRunner:
    """A runner with a defect: its check of a request raises something nobody foresaw."""

    def validate(self, request):
        raise RuntimeError("a defect")

    def __call__(self, request):
        raise AssertionError("never reached")


async def test_a_defect_is_a_500_in_the_same_shape_with_its_traceback_in_the_log_only(tmp_path):
    settings = make_settings(tmp_path)
    app = create_app(settings, runner=_BrokenRunner())
    async with serve(app, settings) as base, httpx.AsyncClient(base_url=base) as http:
        crashed = await http.post("/v1/runs", json={"question": "q"})
    assert crashed.status_code == 500
    assert crashed.json() == {
        "error": {
            "code": "server.internal",
            "message": "the server failed to answer this request; its log has the details",
            "type": "server.internal",
        }
    }
    assert "a defect" not in crashed.text
