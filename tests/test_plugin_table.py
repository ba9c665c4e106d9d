"""The plugin table: every built-in plugin is one row that imports, is of its kind, and says what it
is in every language; its settings do too; and one more row is all a new plugin needs to appear."""

from __future__ import annotations

import inspect
import json
import re
import sys
import textwrap
from collections import Counter
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from reasonloop import plugin_table
from reasonloop.agents import Agent
from reasonloop.kb.base import Index
from reasonloop.kb.embedding.embedders import Embedder
from reasonloop.kb.retrieval.rerankers.base import Reranker
from reasonloop.llm.base import LLM
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.plugin_table import LANGUAGES, PLUGINS, TRANSLATIONS_KEY, PluginRow
from reasonloop.reasoning.base import Reasoning
from reasonloop.registry import KINDS, PluginInfo, Registry, load_dotted
from reasonloop.runs.stores.protocol import RunStore
from reasonloop.server import create_app
from reasonloop.tools.base import Tool
from tests.cli_run import run_cli
from tests.server.helpers import make_settings, serve

BASES: dict[str, type] = {"reasoning": Reasoning, "tool": Tool, "llm": LLM, "embedder": Embedder}
"""Kinds whose plugins subclass a base class."""
PROTOCOLS: dict[str, type] = {"index": Index, "reranker": Reranker, "run_store": RunStore}
"""Kinds whose plugins implement a protocol's methods."""
CJK = re.compile(r"[\u4e00-\u9fff]")


def _methods(protocol: type) -> list[str]:
    return [name for name, value in vars(protocol).items() if not name.startswith("_") and callable(value)]


@pytest.mark.parametrize("row", PLUGINS, ids=lambda r: f"{r.kind}:{r.id}")
def test_each_row_imports_and_is_a_plugin_of_its_kind(row: PluginRow) -> None:
    cls = load_dotted(row.target)
    assert inspect.isclass(cls), row.target
    if row.kind in BASES:
        assert issubclass(cls, BASES[row.kind]), f"{row.target} is no {BASES[row.kind].__name__}"
    else:
        missing = [m for m in _methods(PROTOCOLS[row.kind]) if not callable(getattr(cls, m, None))]
        assert missing == [], f"{row.target} lacks {missing} of {PROTOCOLS[row.kind].__name__}"
    info = getattr(cls, "info", None)
    if info is not None:  # a class that introduces itself does so from its row
        assert info == PluginInfo.from_row(row)


def test_every_kind_is_covered_and_ids_are_unique_per_kind() -> None:
    assert set(BASES) | set(PROTOCOLS) == set(KINDS)
    assert {row.kind for row in PLUGINS} == set(KINDS)
    repeated = [key for key, n in Counter((row.kind, row.id) for row in PLUGINS).items() if n > 1]
    assert repeated == []


@pytest.mark.parametrize("row", PLUGINS, ids=lambda r: f"{r.kind}:{r.id}")
def test_each_row_names_and_describes_its_plugin_in_every_language(row: PluginRow) -> None:
    for language in LANGUAGES:
        name, description = row.text(language)
        assert name.strip() and description.strip(), (row.id, language)
    assert CJK.search(row.zh[1]), f"{row.id}: the Chinese description is not Chinese"
    assert row.zh[1] != row.en[1]


def _fields(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every field of a settings schema, nested models' fields as ``group.field`` after their group."""
    defs = schema.get("$defs", {})
    out: list[tuple[str, dict[str, Any]]] = []

    def walk(properties: dict[str, Any], prefix: str) -> None:
        for key, prop in properties.items():
            out.append((prefix + key, prop))
            ref = prop.get("$ref")
            if ref:
                walk(defs[ref.rsplit("/", 1)[-1]]["properties"], f"{prefix}{key}.")

    walk(schema.get("properties", {}), "")
    return out


def _settings_models() -> list[tuple[str, type[BaseModel]]]:
    found = []
    for row in PLUGINS:
        model = getattr(load_dotted(row.target), "Settings", None)
        if inspect.isclass(model) and issubclass(model, BaseModel):
            found.append((row.id, model))
    return found


def test_the_builtins_with_settings_are_the_strategies() -> None:
    assert {plugin_id for plugin_id, _ in _settings_models()} == {r.id for r in PLUGINS if r.kind == "reasoning"}


@pytest.mark.parametrize(("plugin_id", "model"), _settings_models(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_setting_has_a_label_and_description_in_every_language(plugin_id: str, model: type[BaseModel]) -> None:
    fields = _fields(model.model_json_schema())
    assert fields, plugin_id
    for name, prop in fields:
        assert prop.get("title") and prop.get("description"), f"{plugin_id}: {name} has no English label"
        others = prop.get(TRANSLATIONS_KEY, {})
        for language in LANGUAGES[1:]:
            text = others.get(language, {})
            assert text.get("title") and text.get("description"), f"{plugin_id}: {name} has no {language} label"
        assert CJK.search(others["zh"]["title"]) and CJK.search(others["zh"]["description"]), (plugin_id, name)


def test_a_missing_row_is_an_error_naming_it() -> None:
    with pytest.raises(Exception, match="no reasoning plugin 'nosuch'"):
        PluginInfo.declared("reasoning", "nosuch")


# -- one more row --------------------------------------------------------------------------------
NEW_STRATEGY = """
from pydantic import Field

from reasonloop.plugin_table import field_text
from reasonloop.reasoning.base import Reasoning, ReasoningSettings
from reasonloop.registry import PluginInfo


class EchoSettings(ReasoningSettings):
    loud: bool = Field(default=False, **field_text(en=("Loud", "Shout it back."), zh=("大声", "大声复述。")))


class EchoReasoning(Reasoning):
    info = PluginInfo.declared("reasoning", "echo")
    Settings = EchoSettings

    async def stream(self, question):
        yield self.answer(question.upper() if self.settings.loud else question)
"""


@pytest.fixture
def one_more_row(tmp_path, monkeypatch) -> str:
    """A strategy module on the path, and its row added to the table; returns the module name."""
    module = "rl_row_strategy"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(NEW_STRATEGY), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    row = PluginRow(
        "reasoning", "echo", f"{module}:EchoReasoning", en=("Echo", "Says the question back"), zh=("回声", "复述问题")
    )
    monkeypatch.setattr(plugin_table, "PLUGINS", (*PLUGINS, row))
    monkeypatch.chdir(tmp_path)
    saved = Registry._default
    yield module
    Registry.set_default(saved)


async def test_a_new_row_is_listed_without_importing_it_and_runs(one_more_row: str) -> None:
    registry = Registry()
    [entry] = [e for e in registry.listing("reasoning") if e.id == "echo"]
    assert (entry.source, entry.description, entry.loaded) == ("builtin", "Says the question back", False)
    assert one_more_row not in sys.modules
    agent = Agent("echo", llm=ScriptedProvider(replies=[]), registry=registry, settings={"loud": True})
    assert agent.reasoning_id == "echo"
    assert (await agent.run("hello")).content == "HELLO"


def test_a_new_row_appears_in_reasonloop_plugins(one_more_row: str, capsys) -> None:
    code, out, _ = run_cli(capsys, "plugins", "--kind", "reasoning", "--json")
    rows = {r["id"]: r for r in json.loads(out)}
    assert code == 0
    assert rows["echo"]["description"] == "Says the question back"
    assert rows["echo"]["target"] == f"{one_more_row}:EchoReasoning"


@pytest.mark.integration
async def test_a_new_row_appears_in_the_catalog_with_its_translations(one_more_row: str, tmp_path) -> None:
    settings = make_settings(tmp_path)
    app = create_app(settings, registry=Registry())
    async with serve(app, settings) as url, httpx.AsyncClient(base_url=url, timeout=20) as client:
        views = {v["id"]: v for v in (await client.get("/v1/reasoning")).json()}
    echo = views["echo"]
    assert (echo["name"], echo["description"], echo["error"]) == ("Echo", "Says the question back", None)
    assert echo["translations"] == {"zh": {"name": "回声", "description": "复述问题"}}
    loud = echo["settings_schema"]["properties"]["loud"]
    assert (loud["title"], loud[TRANSLATIONS_KEY]["zh"]["title"]) == ("Loud", "大声")
