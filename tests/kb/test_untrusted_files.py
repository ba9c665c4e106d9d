"""Files made to hurt the pipeline fail alone, with the reason, within bounded memory; the good
file beside each is ingested. Every hostile file is built at test time (tests/kb/hostile.py)."""

from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest

from reasonloop.errors import KBLoadError
from reasonloop.kb.ingest.limits import ParseLimits, check_archive
from reasonloop.kb.ingest.parsing import ParsePool

from . import documents, hostile
from .helpers import LoopbackServer, reply

FORMATS = ("docx", "xlsx", "pptx", "epub")
WORDS = {
    "docx": "The harbour pilot boards every tanker at dawn.",
    "xlsx": "Granite quarry output doubled in spring.",
    "pptx": "Orchard frost warnings go out at midnight.",
    "epub": "The lighthouse keeper counts passing whales.",
}


def names(report) -> tuple[dict[str, str], list[str]]:
    failed = {Path(k).name: v for k, v in report.failed.items()}
    return failed, sorted(Path(s).name for s in report.added)


def mb(kb: int) -> float:
    return kb / 1024


@pytest.mark.integration
async def test_an_archive_bomb_of_each_office_format_fails_alone(make_kb, tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    for fmt in FORMATS:
        (folder / f"bomb.{fmt}").write_bytes(hostile.zip_bomb(fmt, WORDS[fmt]))
        (folder / f"good.{fmt}").write_bytes(hostile.good(fmt, WORDS[fmt]))
        assert (folder / f"bomb.{fmt}").stat().st_size < 5_000_000
    kb = make_kb()
    report = await kb.ingest(str(folder))
    failed, added = names(report)
    assert added == [f"good.{fmt}" for fmt in sorted(FORMATS)]
    assert set(failed) == {f"bomb.{fmt}" for fmt in FORMATS}
    for fmt in FORMATS:
        assert failed[f"bomb.{fmt}"].startswith("too large when unpacked: 3.0 GB > 256 MB"), failed
        assert hostile.MAIN_MEMBER[fmt] in failed[f"bomb.{fmt}"]
    hits = await kb.search("who boards tankers at dawn", top_k=1)
    assert hits and "harbour pilot" in hits[0].text


@pytest.mark.integration
def test_an_archive_bomb_costs_its_worker_little_memory():
    """Measured: the peak resident memory of the workers that were handed the bombs."""
    with ParsePool(ParseLimits(workers=1)) as pool:
        for fmt in FORMATS:
            with pytest.raises(KBLoadError, match="too large when unpacked"):
                pool.parse(hostile.zip_bomb(fmt, WORDS[fmt]), f"/in/bomb.{fmt}", suffix=f".{fmt}")
            assert WORDS[fmt] in pool.parse(hostile.good(fmt, WORDS[fmt]), f"/in/good.{fmt}", suffix=f".{fmt}")[0].text
    # A worker's peak counts the pages it shared with this process between fork and exec, so the
    # bound is over this process's own peak (which a long test session makes large); unpacked, one
    # bomb is 3 GB.
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert 0 < mb(pool.children_maxrss_kb) < mb(own) + 400, (pool.children_maxrss_kb, own)


def test_a_highly_compressed_member_is_refused_by_its_ratio():
    files = hostile.members(hostile.good("docx", "Ratios."))
    files["word/media/blank.bin"] = b"\0" * (64 * 1024 * 1024)  # 64 MB, packed to ~64 KB: 1000 to 1
    with pytest.raises(KBLoadError, match=r"compressed too far: word/media/blank.bin unpacks \d+ times"):
        check_archive(hostile.rezip(files), "/in/x.docx", ParseLimits())
    check_archive(hostile.rezip(files), "/in/x.docx", ParseLimits(max_ratio=5000))  # a limit of one's own


@pytest.mark.integration
async def test_entity_expansion_and_dtds_are_refused_and_no_external_entity_is_opened(make_kb, tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("PASSWORD-OF-THE-VAULT", encoding="utf-8")
    fetched: list[str] = []

    def dtd(handler):
        fetched.append(handler.path)
        reply(handler, b'<!ENTITY remote "REMOTE-ENTITY-TEXT">', "application/xml-dtd")

    with LoopbackServer({"/evil.dtd": dtd}) as server:
        for fmt in FORMATS:
            (folder / f"laughs.{fmt}").write_bytes(hostile.laughs(fmt, WORDS[fmt]))
            (folder / f"good.{fmt}").write_bytes(hostile.good(fmt, WORDS[fmt]))
            xxe = f'<!DOCTYPE x [<!ENTITY xxe SYSTEM "file://{secret}">]>'
            (folder / f"xxe.{fmt}").write_bytes(hostile.with_doctype(fmt, WORDS[fmt], xxe, "xxe"))
            remote = f'<!DOCTYPE x SYSTEM "{server.url}/evil.dtd">'
            (folder / f"remote.{fmt}").write_bytes(hostile.with_doctype(fmt, WORDS[fmt], remote, "remote"))
        plain_dtd = "<!DOCTYPE worksheet [<!ELEMENT worksheet ANY>]>"
        (folder / "dtd.xlsx").write_bytes(hostile.with_doctype("xlsx", WORDS["xlsx"], plain_dtd))
        kb = make_kb()
        started = time.monotonic()
        report = await kb.ingest(str(folder))
    failed, added = names(report)
    assert time.monotonic() - started < 120
    assert [a for a in added if a.startswith("good.")] == [f"good.{fmt}" for fmt in sorted(FORMATS)]
    for fmt in FORMATS:
        assert failed[f"laughs.{fmt}"] == f"entity expansion refused ({hostile.MAIN_MEMBER[fmt]})"
        assert failed[f"xxe.{fmt}"] == f"entity expansion refused ({hostile.MAIN_MEMBER[fmt]})"
    assert "dtd.xlsx" in added  # a DTD that declares no entity has nothing to expand: read as it is
    assert fetched == []  # no external DTD was ever opened
    for leaked in ("PASSWORD-OF-THE-VAULT", "REMOTE-ENTITY-TEXT", "lollollollollollollollollollol"):
        hits = await kb.search(leaked, top_k=20, mode="lexical")
        assert not [h for h in hits if leaked in h.text], leaked


@pytest.mark.integration
async def test_a_decompression_bomb_png_fails_alone(make_kb, tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "bomb.png").write_bytes(hostile.png_bomb())
    (folder / "scan.png").write_bytes(documents.image_bytes(documents.text_image(["Invoice due in thirty days"])))
    kb = make_kb()
    report = await kb.ingest(str(folder))
    failed, added = names(report)
    assert added == ["scan.png"]
    assert failed == {
        "bomb.png": "image of 900 million pixels exceeds the limit of 50 million ([kb.limits] max_pixels)"
    }


@pytest.mark.integration
def test_a_poster_sized_scanned_page_is_ocrd_within_the_pixel_cap():
    """A 14,400-unit image-only page is 40,000 × 40,000 pixels at the OCR resolution (4.8 GB as
    RGB): it is rendered at the scale of the pixel cap instead, and read."""
    poster = hostile.poster_scan(["Poster headline about rivers"])
    with ParsePool(ParseLimits(workers=1), in_process=False) as pool:
        docs = pool.parse(poster, "/in/poster.pdf", suffix=".pdf")
        assert "rivers" in docs[0].text.lower(), docs[0].text
        assert "lighthouse" in pool.parse(documents.text_pdf([WORDS["epub"]]), "/in/t.pdf", suffix=".pdf")[0].text
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # counted in a worker's peak (see above)
    assert 0 < mb(pool.children_maxrss_kb) < mb(own) + 1800, pool.children_maxrss_kb  # 1.2 GB; uncapped 4.6 GB


@pytest.fixture
def misbehaving(make_kb):
    def open_kb(**limits):
        kb = make_kb()
        kb.index.parse_limits = ParseLimits(**limits)
        kb.index.parse_loaders = {
            ".crash": "tests.kb.bad_loaders:segfault",
            ".hang": "tests.kb.bad_loaders:hang",
            ".plain": "tests.kb.bad_loaders:plain",
        }
        return kb

    return open_kb


@pytest.mark.integration
async def test_a_loader_that_segfaults_or_hangs_costs_its_file_only(misbehaving, tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.crash").write_text("boom", encoding="utf-8")
    (folder / "b.plain").write_text("Beekeepers smoke the hive before opening it.", encoding="utf-8")
    (folder / "c.hang").write_text("zzz", encoding="utf-8")
    (folder / "d.plain").write_text("Ferries stop running when the fog comes in.", encoding="utf-8")
    (folder / "e.md").write_text("# Tides\n\nSpring tides follow the full moon.", encoding="utf-8")
    kb = misbehaving(timeout_s=4, workers=2)
    started = time.monotonic()
    report = await kb.ingest([str(p) for p in sorted(folder.iterdir())])
    assert time.monotonic() - started < 60
    failed, added = names(report)
    assert failed == {
        "a.crash": "the parser crashed (signal 11)",
        "c.hang": "timed out after 4 s ([kb.limits] timeout_s)",
    }
    assert added == ["b.plain", "d.plain", "e.md"]


@pytest.mark.integration
def test_a_worker_past_its_memory_or_cpu_limit_fails_its_file_and_a_fresh_one_takes_the_next():
    limits = ParseLimits(workers=1, memory_mb=512, cpu_s=2, timeout_s=60)
    loaders = {
        ".hog": "tests.kb.bad_loaders:hog",
        ".spin": "tests.kb.bad_loaders:spin",
        ".plain": "tests.kb.bad_loaders:plain",
    }
    with ParsePool(limits, loaders=loaders) as pool:
        with pytest.raises(KBLoadError, match=r"needs more memory than the limit of 512 MB"):
            pool.parse(b"x", "/in/a.hog", suffix=".hog")
        with pytest.raises(KBLoadError, match=r"used more than 2 s of CPU time"):
            pool.parse(b"x", "/in/b.spin", suffix=".spin")
        assert pool.parse(b"still here", "/in/c.plain", suffix=".plain")[0].text == "still here"
        assert pool.started == 3
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # counted in a worker's peak (see above)
    assert mb(pool.children_maxrss_kb) < mb(own) + 600  # the hog never got past its address space


@pytest.mark.integration
def test_ingest_exits_3_when_a_hostile_file_fails_beside_good_ones(tmp_path, monkeypatch, capsys):
    from .test_cli import run

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "bomb.docx").write_bytes(hostile.laughs("docx", WORDS["docx"]))
    (folder / "bomb.png").write_bytes(hostile.png_bomb())
    (folder / "notes.md").write_text("# Notes\n\nThe kiln fires on Thursdays.", encoding="utf-8")
    code, out, err = run(["ingest", str(folder), "--kb", str(tmp_path / "kb")], capsys)
    assert code == 3, (out, err)
    assert "entity expansion refused" in err and "900 million pixels" in " ".join(err.split())
