import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from reasonloop.errors import KBLoadError
from reasonloop.kb.ingest.loaders import DAMAGED_PDF, LoadedDocument, Page, RecordError, load_bytes, load_file, walk

from .helpers import make_damaged_pdf, make_docx, make_pdf


def _one(path: Path) -> LoadedDocument:
    _, docs = load_file(path)
    assert len(docs) == 1 and isinstance(docs[0], LoadedDocument)
    return docs[0]


def test_txt_and_markdown(tmp_path):
    (tmp_path / "a.txt").write_text("plain words", encoding="utf-8")
    (tmp_path / "b.md").write_text("intro\n\n# The Title\n\nbody text", encoding="utf-8")
    a = _one(tmp_path / "a.txt")
    assert (a.title, a.text, a.pages) == ("a", "plain words", None)
    assert a.source == str(tmp_path / "a.txt")
    b = _one(tmp_path / "b.md")
    assert b.title == "The Title"
    assert "body text" in b.text


def test_utf8_bom_and_chinese(tmp_path):
    (tmp_path / "zh.txt").write_bytes("\ufeff知识库。".encode())
    assert _one(tmp_path / "zh.txt").text == "知识库。"


def test_html_main_text_and_title(tmp_path):
    html = (
        "<html><head><title> My  Page </title><script>var secret = 1;</script></head>"
        "<body><nav>menu</nav><article><h1>Heading</h1>"
        + "".join(f"<p>Paragraph {i} explains retrieval augmented generation in detail.</p>" for i in range(6))
        + "</article></body></html>"
    )
    (tmp_path / "p.html").write_text(html, encoding="utf-8")
    doc = _one(tmp_path / "p.html")
    assert doc.title == "My Page"
    assert "Paragraph 3 explains" in doc.text
    assert "var secret" not in doc.text


def test_html_fallback_strips_tags_when_extractor_finds_nothing():
    docs = load_bytes(b"<div>tiny <b>bold</b></div><style>x{}</style>", "u", suffix=".html")
    assert isinstance(docs[0], LoadedDocument)
    assert docs[0].text == "tiny bold"


def test_pdf_keeps_page_numbers(tmp_path):
    (tmp_path / "d.pdf").write_bytes(make_pdf(["First page text", "", "Third page text"]))
    doc = _one(tmp_path / "d.pdf")
    assert doc.text == "First page text\n\nThird page text"
    assert doc.pages == [Page(1, "First page text"), Page(3, "Third page text")]
    assert doc.metadata["pages"] == 3


def test_truncated_pdf_is_a_load_error(tmp_path):
    data = make_pdf(["Some text here"])
    (tmp_path / "bad.pdf").write_bytes(data[: len(data) // 3])
    with pytest.raises(KBLoadError) as info:
        load_file(tmp_path / "bad.pdf")
    assert info.value.code == "kb.load_error"
    assert "bad.pdf" in info.value.message


def test_a_damaged_pdf_is_read_with_a_warning_in_our_words(tmp_path, caplog):
    (tmp_path / "damaged.pdf").write_bytes(make_damaged_pdf(["Install the pump before the filter."]))
    with caplog.at_level(logging.DEBUG):
        doc = _one(tmp_path / "damaged.pdf")
    assert doc.text == "Install the pump before the filter."
    assert doc.warnings == [DAMAGED_PDF]
    ours = [r for r in caplog.records if r.name == "reasonloop.kb.loaders"]
    assert ours and all(r.levelno == logging.DEBUG and "damaged.pdf" in r.getMessage() for r in ours)
    assert _one_pdf_is_clean(tmp_path)


def _one_pdf_is_clean(tmp_path) -> bool:
    (tmp_path / "clean.pdf").write_bytes(make_pdf(["Fine."]))
    return _one(tmp_path / "clean.pdf").warnings == []


@pytest.mark.integration
def test_pypdf_says_nothing_on_stderr_of_a_process_reading_a_damaged_pdf(tmp_path):
    path = tmp_path / "damaged.pdf"
    path.write_bytes(make_damaged_pdf(["Replace the filter every month."]))
    code = (
        "import sys; from pathlib import Path; from reasonloop.kb.ingest.loaders import load_file\n"
        "_, docs = load_file(Path(sys.argv[1])); print(docs[0].text); print(docs[0].warnings)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("Replace the filter every month.\n") and "damaged PDF" in done.stdout


def test_pdf_without_text_is_a_load_error(tmp_path):
    (tmp_path / "blank.pdf").write_bytes(make_pdf([""]))
    with pytest.raises(KBLoadError, match="no extractable text"):
        load_file(tmp_path / "blank.pdf")


def test_a_pdf_whose_every_page_fails_says_why(tmp_path, monkeypatch):
    from reasonloop.kb.ingest.loaders import pdf

    def fails(*_args, **_kwargs):
        raise MemoryError("cannot allocate the page's image")

    monkeypatch.setattr(pdf, "page_layout", fails)
    (tmp_path / "two.pdf").write_bytes(make_pdf(["First page.", "Second page."]))
    with pytest.raises(KBLoadError, match=r"no page could be read \(page 1: MemoryError: cannot allocate"):
        load_file(tmp_path / "two.pdf")


def test_docx_paragraphs_tables_and_title(tmp_path):
    (tmp_path / "w.docx").write_bytes(make_docx(["Hello world.", "Second para."], title="Doc Title"))
    doc = _one(tmp_path / "w.docx")
    assert doc.title == "Doc Title"
    assert doc.text == "Hello world.\n\nSecond para.\n\ncell-a | cell-b"


def test_corrupt_docx_is_a_load_error(tmp_path):
    (tmp_path / "w.docx").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(KBLoadError, match="corrupt"):
        load_file(tmp_path / "w.docx")


def test_json_list_and_single_object(tmp_path):
    records = [{"id": "r1", "title": "One", "text": "first", "year": 2020}, {"text": "second"}, {"title": "no text"}]
    (tmp_path / "d.json").write_text(json.dumps(records), encoding="utf-8")
    _, docs = load_file(tmp_path / "d.json")
    good = [d for d in docs if isinstance(d, LoadedDocument)]
    bad = [d for d in docs if isinstance(d, RecordError)]
    assert [(d.doc_id, d.title, d.text) for d in good] == [("r1", "One", "first"), ("1", "d #1", "second")]
    assert good[0].metadata == {"year": 2020, "type": "record"}
    assert good[0].source.endswith("d.json#r1")
    assert len(bad) == 1 and "no 'text'" in bad[0].reason
    (tmp_path / "one.json").write_text(json.dumps({"text": "solo"}), encoding="utf-8")
    assert _one(tmp_path / "one.json").text == "solo"


def test_jsonl_bad_lines_reported_rest_kept(tmp_path):
    lines = [json.dumps({"id": 1, "text": "ok one"}), "{broken", "", json.dumps({"id": 2, "text": "ok two"})]
    (tmp_path / "d.jsonl").write_text("\n".join(lines), encoding="utf-8")
    _, docs = load_file(tmp_path / "d.jsonl")
    assert [d.text for d in docs if isinstance(d, LoadedDocument)] == ["ok one", "ok two"]
    errors = [d for d in docs if isinstance(d, RecordError)]
    assert errors[0].source.endswith("d.jsonl:2") and "invalid JSON" in errors[0].reason


def test_invalid_json_file(tmp_path):
    (tmp_path / "d.json").write_text("{nope", encoding="utf-8")
    with pytest.raises(KBLoadError, match="invalid JSON"):
        load_file(tmp_path / "d.json")


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("empty.txt", b"", "empty"),
        ("blank.md", b"  \n\n ", "empty"),
        ("binary.txt", bytes(range(256)) * 4, "binary"),
        ("latin1.txt", "café olé".encode("latin-1"), "UTF-8"),
        ("thing.xyz", b"data", "unsupported"),
    ],
)
def test_bad_files_raise_load_error(tmp_path, name, data, reason):
    (tmp_path / name).write_bytes(data)
    with pytest.raises(KBLoadError, match=reason):
        load_file(tmp_path / name)


def test_missing_file(tmp_path):
    with pytest.raises(KBLoadError, match="cannot read"):
        load_file(tmp_path / "nope.txt")


def test_walk_recursive_with_globs(tmp_path):
    for rel in [
        "a.txt",
        "sub/b.md",
        "sub/deep/c.pdf",
        "sub/skip.bin",
        ".hidden/x.txt",
        "drafts/d.txt",
        ".reasonloop/i.txt",
    ]:
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x")
    rel = lambda ps: [p.relative_to(tmp_path).as_posix() for p in ps]  # noqa: E731
    assert rel(walk(tmp_path)) == ["a.txt", "drafts/d.txt", "sub/b.md", "sub/deep/c.pdf"]
    assert rel(walk(tmp_path, include=["*.md", "*.txt"], exclude=["drafts"])) == ["a.txt", "sub/b.md"]
    assert rel(walk(tmp_path, exclude=["sub/deep/*"])) == ["a.txt", "drafts/d.txt", "sub/b.md"]
