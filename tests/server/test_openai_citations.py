"""The run's citations reach OpenAI clients through the ``citations`` extension field."""

from __future__ import annotations

from collections.abc import AsyncIterator

import openai
import pytest

from reasonloop.events import Answer, AnswerDelta, Citation, Event, RunStarted, Usage
from reasonloop.runs.models import RunRequest
from reasonloop.server import create_app
from tests.server.helpers import make_settings, serve

pytestmark = pytest.mark.integration

CITED = [
    Citation(marker=1, chunk_id="c1", document_id="d1", source="docs/tantivy.md", page=2, quote="a search engine"),
    Citation(marker=2, chunk_id="c7", document_id="d3", source="https://example.org/rust", score=0.5),
]


class CitingRunner:
    """Answers every question in two deltas, citing :data:`CITED`."""

    def __call__(self, request: RunRequest) -> AsyncIterator[Event]:
        return self._run(request)

    async def _run(self, request: RunRequest) -> AsyncIterator[Event]:
        yield RunStarted(reasoning="qa", question=request.question)
        yield AnswerDelta(text="Tantivy is ")
        yield AnswerDelta(text="a search engine [1][2].")
        usage = Usage(llm_calls=1, prompt_tokens=10, completion_tokens=8)
        yield Answer(text="Tantivy is a search engine [1][2].", citations=list(CITED), usage=usage)


@pytest.fixture
async def client(tmp_path):
    settings = make_settings(tmp_path)
    async with serve(create_app(settings, runner=CitingRunner()), settings) as url:
        sdk = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        yield sdk
        await sdk.close()


def _expected() -> list[dict]:
    return [c.model_dump(mode="json") for c in CITED]


async def test_a_whole_completion_carries_the_citations_and_the_run_id(client):
    raw = await client.chat.completions.with_raw_response.create(
        model="reasonloop", messages=[{"role": "user", "content": "What is tantivy?"}]
    )
    completion = raw.parse()
    assert completion.choices[0].message.content == "Tantivy is a search engine [1][2]."
    assert completion.model_extra["citations"] == _expected()
    assert completion.id == f"chatcmpl-{raw.headers['x-run-id']}"


async def test_the_final_streamed_chunk_carries_the_citations(client):
    stream = await client.chat.completions.create(
        model="reasonloop", messages=[{"role": "user", "content": "What is tantivy?"}], stream=True
    )
    seen = []
    async for chunk in stream:
        finish = [c.finish_reason for c in chunk.choices if c.finish_reason]
        seen.append((bool(finish), (chunk.model_extra or {}).get("citations")))
    finals = [cited for ended, cited in seen if ended]
    assert finals == [_expected()]
    assert all(cited is None for ended, cited in seen if not ended)  # only the last chunk carries them
