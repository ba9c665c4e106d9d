"""Citations point into the text of their page: ``page_text[start:end]`` is the chunk, and the
quote starts there; paged files report progress per page; bad PDFs fail alone."""

from __future__ import annotations

import pytest

from reasonloop.errors import DocumentNotFound

from . import documents as make

TOPICS = ("harbour", "lantern", "glacier")


def _page_text(topic: str, n: int) -> str:
    return "\n".join(f"Line {i} of page {n} tells about the {topic} in detail." for i in range(14))


@pytest.mark.integration
async def test_citation_offsets_slice_the_quoted_text_of_their_page(make_kb, tmp_path):
    (tmp_path / "d").mkdir()
    pdf = make.text_pdf([_page_text(t, n) for n, t in enumerate(TOPICS, start=1)])
    (tmp_path / "d" / "manual.pdf").write_bytes(pdf)
    (tmp_path / "d" / "notes.txt").write_text("Intro line.\n\n" + "The glacier notes say little. " * 30)
    kb = make_kb(chunk_tokens=48, chunk_overlap=8)
    report = await kb.ingest(str(tmp_path / "d"))
    assert len(report.added) == 2
    checked = 0
    for topic in TOPICS:
        for hit in await kb.search(topic, top_k=20, mode="lexical"):
            citation = hit.citation(marker=1, quote_chars=40)
            number = citation.page or 1
            doc, text, numbers = await kb.page(citation.document_id, number)
            assert text[citation.start : citation.end] == hit.text
            assert text[citation.start :].startswith(citation.quote)
            if doc.source.endswith(".pdf"):
                assert numbers == [1, 2, 3]
                assert citation.page == TOPICS.index(topic) + 1 or topic not in hit.text
                assert f"of page {citation.page} " in citation.quote
            checked += 1
    assert checked > 6
    await kb.close()


@pytest.mark.integration
async def test_chunks_of_a_page_start_again_at_zero_on_the_next_page(make_kb, tmp_path):
    (tmp_path / "two.pdf").write_bytes(make.text_pdf(["Alpha page one.", "Beta page two."]))
    kb = make_kb()
    await kb.ingest(str(tmp_path / "two.pdf"))
    hits = {h.metadata["page"]: h for h in await kb.search("page", top_k=5, mode="lexical")}
    assert {n: (h.metadata["start"], h.metadata["end"], h.text) for n, h in hits.items()} == {
        1: (0, 15, "Alpha page one."),
        2: (0, 14, "Beta page two."),
    }
    await kb.close()


@pytest.mark.integration
async def test_a_document_s_whole_text_is_its_pages_in_order(make_kb, tmp_path):
    pages = [_page_text(t, n) for n, t in enumerate(TOPICS, start=1)]
    (tmp_path / "manual.pdf").write_bytes(make.text_pdf(pages))
    kb = make_kb(chunk_tokens=48, chunk_overlap=8)  # several chunks a page, each page's offsets from 0
    await kb.ingest(str(tmp_path / "manual.pdf"))
    doc = (await kb.documents())[0]
    row, text = await kb.text(doc.id)
    assert row.id == doc.id
    assert text == "\n\n".join([(await kb.page(doc.id, n))[1] for n in (1, 2, 3)])
    assert [text.index(f"of page {n} ") for n in (1, 2, 3)] == sorted(text.index(f"of page {n} ") for n in (1, 2, 3))
    assert await kb.text("nope") is None
    with kb.index.store.lock:  # an index from before page texts were stored: the chunks stitched
        kb.index.store.conn.execute("DELETE FROM pages")
    _, stitched = await kb.text(doc.id)
    assert [stitched.index(f"Line 13 of page {n} ") for n in (1, 2, 3)] == sorted(
        stitched.index(f"Line 13 of page {n} ") for n in (1, 2, 3)
    )
    assert stitched.count("Line 0 of page 2 ") == 1  # overlaps removed
    await kb.close()


async def test_a_missing_page_or_document_is_not_found(make_kb, tmp_path):
    (tmp_path / "a.txt").write_text("Only one page here.")
    kb = make_kb()
    await kb.ingest(str(tmp_path / "a.txt"))
    doc = (await kb.documents())[0]
    assert (await kb.page(doc.id, 1))[1] == "Only one page here."
    with pytest.raises(DocumentNotFound, match="has no page 2"):
        await kb.page(doc.id, 2)
    with pytest.raises(DocumentNotFound):
        await kb.page("nope", 1)
    await kb.delete(doc.id)
    with pytest.raises(DocumentNotFound):
        await kb.page(doc.id, 1)
    await kb.close()


@pytest.mark.integration
async def test_bad_pdfs_fail_alone_and_pages_are_reported_as_read(make_kb, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "locked.pdf").write_bytes(make.encrypted_pdf("Locked away.", "pw"))
    good = make.text_pdf([f"Page {n} of the handbook." for n in range(1, 13)])
    (tmp_path / "d" / "corrupt.pdf").write_bytes(b"%PDF-1.7\n" + good[300:700])
    (tmp_path / "d" / "handbook.pdf").write_bytes(good)
    kb = make_kb()
    seen = []
    report = await kb.ingest(str(tmp_path / "d"), on_progress=seen.append)
    failed = {k.rsplit("/", 1)[-1]: v for k, v in report.failed.items()}
    assert set(failed) == {"locked.pdf", "corrupt.pdf"}
    assert "password" in failed["locked.pdf"] and "corrupt" in failed["corrupt.pdf"]
    assert [s.rsplit("/", 1)[-1] for s in report.added] == ["handbook.pdf"]
    pages = [(p.pages_done, p.pages_total) for p in seen if p.current.endswith("handbook.pdf") and p.pages_total]
    assert sorted(set(pages)) == [(n, 12) for n in range(1, 13)]
    await kb.close()
