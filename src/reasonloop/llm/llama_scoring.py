"""Scoring continuations with llama.cpp: the summed log-probability a loaded model gives each
candidate text after a prompt, read from its own next-token distributions.

The prompt is evaluated once per call, each continuation's tokens are decoded after it and the
cache is rolled back to the prompt between candidates, so a yes/no decision costs one prompt
evaluation (a one-token candidate needs no further decoding at all). Used by
:meth:`reasonloop.llm.local_provider.LocalProvider.score`, under the model's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["continuation_tokens", "score_tokens"]


def continuation_tokens(llama: Any, prompt_ids: list[int], prompt: str, continuation: str) -> tuple[int, list[int]]:
    """``(shared, tail)``: how many of ``prompt_ids`` start the tokens of ``prompt + continuation``
    too, and the tokens that follow them (the continuation as the model would write it)."""
    if not continuation:
        return len(prompt_ids), []
    full = llama.tokenize((prompt + continuation).encode("utf-8"), add_bos=True, special=True)
    shared = _common_prefix(prompt_ids, full)
    return shared, full[shared:]


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def score_tokens(llama: Any, prompt_ids: list[int], items: list[tuple[int, list[int]]]) -> list[float]:
    """The summed log-probabilities of each ``(shared, tail)``: ``tail`` after ``prompt_ids[:shared]``.

    Blocking, under the model's lock. The prompt is evaluated once, from its first token, even
    when the cache holds a prefix of it: llama.cpp's results vary slightly (up to a tenth of a nat
    on a few hundred tokens) with how a text was split into batches, so reusing what earlier calls
    left would make a score depend on what ran before.

    A candidate that continues the whole prompt takes its first token's log-probability from the
    prompt's last logits and decodes the rest of its tokens in one batch with logits for every
    position; the cache is then cut back to the prompt. A candidate whose tokens start inside the
    prompt (it merges with the prompt's last tokens) decodes from there. Candidates are taken
    longest shared prefix first, so the cache is cut back into the prompt only once those that
    continue all of it are done.

    The model is left holding at most all but the last prompt token, as after a generation: a
    later ``create_completion`` reuses that prefix and evaluates at least one token, so it never
    samples from the logits of a scored continuation.
    """
    size = len(prompt_ids)
    _rewind(llama, prompt_ids, 0)
    llama.eval(prompt_ids)
    after_prompt = _log_softmax(_last_logits(llama, 1))[0]
    cached = size
    scores = [0.0] * len(items)
    try:
        for index in sorted(range(len(items)), key=lambda i: -items[i][0]):
            shared, tail = items[index]
            if not tail:
                continue
            if shared == size:
                start, feed, targets = size, tail[:-1], tail[1:]
                total = float(after_prompt[tail[0]])
            else:
                start, feed, targets = shared - 1, [prompt_ids[shared - 1], *tail[:-1]], tail
                total = 0.0
            if start < cached:
                _rewind(llama, prompt_ids, start)
                cached = start
            if feed:
                total += _decode_and_score(llama, start, feed, targets)
                if len(feed) > llama.n_batch:
                    # Decoded in several batches: a sliding-window cache (Gemma's) may have reused
                    # cells of prompt positions the next candidate attends to. Read them again.
                    _rewind(llama, prompt_ids, 0)
                    llama.eval(prompt_ids[:cached])
                else:
                    _rewind(llama, prompt_ids, cached)
            scores[index] = total
    finally:
        keep = min(cached, size - 1)
        if not llama._ctx.kv_cache_seq_rm(-1, keep, -1):
            llama.reset()
            keep = 0
        llama.n_tokens = keep
        if hasattr(llama, "_requires_eval"):
            llama._requires_eval = True
    return scores


def _rewind(llama: Any, tokens: list[int], n: int) -> None:
    """Leave the model's cache holding ``tokens[:n]`` (the model has evaluated at least those):
    the rest is dropped, or, for a model whose cache cannot drop a tail (a recurrent one), the
    cache is cleared and ``tokens[:n]`` evaluated again."""
    if llama._ctx.kv_cache_seq_rm(-1, n, -1):
        llama.n_tokens = n
        return
    llama.reset()
    if n:
        llama.eval(tokens[:n])


def _decode_and_score(llama: Any, start: int, feed: list[int], targets: list[int]) -> float:
    """Decode ``feed`` at positions ``start...`` with logits for each, and sum the log-probability
    each position gives the matching token of ``targets``. The model's token bookkeeping
    (``n_tokens``) is left alone: the caller cuts these positions off again."""
    import numpy as np

    total = 0.0
    for offset in range(0, len(feed), llama.n_batch):
        part = feed[offset : offset + llama.n_batch]
        llama._batch.set_batch(batch=part, n_past=start + offset, logits_all=True)
        llama._ctx.decode(llama._batch)
        logprobs = _log_softmax(_last_logits(llama, len(part)))
        wanted = np.asarray(targets[offset : offset + len(part)])
        total += float(logprobs[np.arange(len(part)), wanted].sum())
    return total


def _last_logits(llama: Any, rows: int) -> Any:
    """The logits of the last decode's ``rows`` output positions, copied as float64."""
    import numpy as np

    pointer = llama._ctx.get_logits()
    return np.ctypeslib.as_array(pointer, shape=(rows, llama.n_vocab())).astype(np.float64)


def _log_softmax(logits: Any) -> Any:
    """Row-wise natural-log softmax of a 2-D array."""
    import numpy as np

    peak = logits.max(axis=1, keepdims=True)
    return logits - (peak + np.log(np.exp(logits - peak).sum(axis=1, keepdims=True)))
