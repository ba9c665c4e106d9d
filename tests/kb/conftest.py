from pathlib import Path

import pytest

from reasonloop.config import Settings
from reasonloop.kb.knowledge_base import KnowledgeBase

from .helpers import HashEmbedder, make_docx, make_pdf


@pytest.fixture
def embedder():
    return HashEmbedder()


@pytest.fixture
def make_kb(tmp_path, embedder):
    def _open(path: Path | None = None, emb=None, **options):
        settings = Settings(kb={"options": options})
        kb = KnowledgeBase.open(path or tmp_path / "kb", settings=settings, embedder=emb or embedder)
        return kb

    return _open


@pytest.fixture
def corpus(tmp_path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "cats.txt").write_text(
        "Cats sleep up to sixteen hours a day.\n\nA cat prefers warm places such as sunny windows.", encoding="utf-8"
    )
    (root / "sub" / "markets.md").write_text(
        "# Markets\n\nStock markets fell sharply on Monday after the bank raised interest rates.", encoding="utf-8"
    )
    (root / "zh.md").write_text("# 北京\n\n北京是中华人民共和国的首都，也是政治和文化中心。", encoding="utf-8")
    (root / "manual.pdf").write_bytes(
        make_pdf(["Install the pump before the filter.", "Replace the filter every month."])
    )
    (root / "notes.docx").write_bytes(make_docx(["Quarterly planning meeting notes.", "Budget approved for robots."]))
    return root
