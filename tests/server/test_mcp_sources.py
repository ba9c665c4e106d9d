"""What the MCP ingest tool may read: paths checked after their links resolve, file by file."""

from __future__ import annotations

import pytest

from reasonloop.errors import ToolBlocked
from reasonloop.server.mcp_server import _allowed_sources


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
    found = _allowed_sources(str(root), [str(root)], False, str(root / "kb"))
    assert sorted(found) == [str(root / "a.md"), str(root / "sub" / "b.md")]


def test_a_link_out_of_the_roots_or_a_path_outside_is_blocked(tree):
    root = tree / "root"
    with pytest.raises(ToolBlocked):
        _allowed_sources(str(root / "sub" / "link.md"), [str(root)], False, str(root / "kb"))
    with pytest.raises(ToolBlocked):
        _allowed_sources(str(root / ".." / "outside.md"), [str(root)], False, str(root / "kb"))


def test_the_knowledge_bases_own_folder_is_never_a_source(tree):
    root = tree / "root"
    kb = root / "kb"
    with pytest.raises(ToolBlocked, match="inside the knowledge base"):
        _allowed_sources(str(kb / "tenants" / "other" / "uploads" / "theirs.md"), [str(root)], False, str(kb))
    with pytest.raises(ToolBlocked):
        _allowed_sources(str(kb), [str(root)], False, str(kb))


def test_urls_follow_their_switch(tree):
    assert _allowed_sources("https://example.org/a", [], True, str(tree)) == ["https://example.org/a"]
    with pytest.raises(ToolBlocked, match="ingest_urls"):
        _allowed_sources("https://example.org/a", [], False, str(tree))
