"""What the MCP tools' arguments may reach: the paths ingest may read (checked after their links
resolve, file by file; none until roots are set), and the conditions of search's filters."""

from __future__ import annotations

import pytest

from reasonloop.errors import RequestInvalid, ToolBlocked
from reasonloop.kb.base import Filter
from reasonloop.server.mcp.inputs import allowed_sources, search_filters


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("a", encoding="utf-8")
    (root / "sub" / "b.md").write_text("b", encoding="utf-8")
    (tmp_path / "outside.md").write_text("secret", encoding="utf-8")
    (root / "sub" / "link.md").symlink_to(tmp_path / "outside.md")
    (root / "kb" / "tenants" / "other" / "uploads").mkdir(parents=True)
    (root / "kb" / "tenants" / "other" / "uploads" / "theirs.md").write_text("theirs", encoding="utf-8")
    return tmp_path


def test_a_folder_gives_its_files_inside_the_roots_and_not_its_links_out(tree):
    root = tree / "root"
    found = allowed_sources(str(root), [str(root)], False, str(root / "kb"))
    assert sorted(found) == [str(root / "a.md"), str(root / "sub" / "b.md")]


def test_a_link_out_of_the_roots_or_a_path_outside_is_blocked(tree):
    root = tree / "root"
    with pytest.raises(ToolBlocked):
        allowed_sources(str(root / "sub" / "link.md"), [str(root)], False, str(root / "kb"))
    with pytest.raises(ToolBlocked):
        allowed_sources(str(root / ".." / "outside.md"), [str(root)], False, str(root / "kb"))


def test_the_knowledge_bases_own_folder_is_never_a_source(tree):
    root = tree / "root"
    kb = root / "kb"
    with pytest.raises(ToolBlocked, match="inside the knowledge base"):
        allowed_sources(str(kb / "tenants" / "other" / "uploads" / "theirs.md"), [str(root)], False, str(kb))
    with pytest.raises(ToolBlocked):
        allowed_sources(str(kb), [str(root)], False, str(kb))


def test_urls_follow_their_switch(tree):
    assert allowed_sources("https://example.org/a", [], True, str(tree)) == ["https://example.org/a"]
    with pytest.raises(ToolBlocked, match="ingest_urls"):
        allowed_sources("https://example.org/a", [], False, str(tree))


def test_search_filters_say_each_condition_or_refuse_it():
    assert search_filters(None) is None
    assert search_filters({"source": "a.md", "page": {"gte": 3, "lte": 5}, "tags": {"contains": "x"}}) == [
        Filter(field="source", op="eq", value="a.md"),
        Filter(field="page", op="range", value=[3, 5]),
        Filter(field="tags", op="contains", value="x"),
    ]
    assert search_filters({"page": {"lte": 2}}) == [Filter(field="page", op="range", value=[None, 2])]
    assert search_filters({"page": {"in": [1, 2]}}) == [Filter(field="page", op="in", value=[1, 2])]
    for bad, words in [
        ({"page": {"gt": 3}}, "filters.page: unknown operator gt"),
        ({"page": {}}, "filters.page: unknown operator (none)"),
        ({"page": {"in": 3}}, "filters.page.in: needs a list of values"),
    ]:
        with pytest.raises(RequestInvalid) as refused:
            search_filters(bad)
        assert str(refused.value).startswith(f"[request.invalid] {words}")


def test_ingest_reads_no_local_path_while_no_root_is_set(tmp_path):
    (tmp_path / "a.md").write_text("# A", encoding="utf-8")
    with pytest.raises(ToolBlocked, match=r"ingesting local paths is off until \[mcp\] ingest_roots"):
        allowed_sources(str(tmp_path / "a.md"), [], False, str(tmp_path / "kb"))
