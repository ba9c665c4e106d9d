"""Documents as they come: PDF tables, scanned pages and images (OCR), slides, spreadsheets,
e-books; page numbers and offsets within the page; bad files failing alone."""

from __future__ import annotations

import tracemalloc

import pytest

from reasonloop.errors import KBLoadError
from reasonloop.kb.ingest.loaders import LoadedDocument, Page, load_bytes

from . import documents as make

TABLE_ROWS = [["Region", "Sales", "Growth"], ["North", "120", "8%"], ["South", "95", "-2%"]]
TABLE_MD = "| Region | Sales | Growth |\n| --- | --- | --- |\n| North | 120 | 8% |\n| South | 95 | -2% |"
EN_LINES = ["The pump must be installed before the filter.", "Replace the filter every month."]
ZH_LINES = ["知识库支持中文文档检索。", "扫描件需要先识别文字。"]


def _doc(data: bytes, suffix: str, **kwargs) -> LoadedDocument:
    docs = load_bytes(data, f"/docs/file{suffix}", suffix=suffix, default_title="file", **kwargs)
    assert len(docs) == 1 and isinstance(docs[0], LoadedDocument)
    return docs[0]


def test_pdf_table_becomes_a_markdown_table_on_its_page():
    data = make.table_pdf("Quarterly results by region.", TABLE_ROWS, "Sales grew in the north.")
    doc = _doc(data, ".pdf")
    assert doc.pages == [Page(1, f"Quarterly results by region.\n\n{TABLE_MD}\n\nSales grew in the north.")]
    assert doc.metadata == {"type": "pdf", "pages": 1}


def test_text_pdf_pages_and_their_text():
    doc = _doc(make.text_pdf(["First page.\nSecond line.", "", "Third page."]), ".pdf")
    assert doc.pages == [Page(1, "First page.\nSecond line."), Page(3, "Third page.")]
    assert doc.text == "First page.\nSecond line.\n\nThird page."


@pytest.mark.integration
@pytest.mark.parametrize(("lines", "label"), [(EN_LINES, "english"), (ZH_LINES, "chinese")])
def test_image_only_pdf_is_read_by_ocr(lines, label):
    doc = _doc(make.scanned_pdf([lines[:1], lines[1:]]), ".pdf")
    assert doc.pages == [Page(1, lines[0]), Page(2, lines[1])], label


@pytest.mark.integration
def test_images_are_read_by_ocr_and_tiff_frames_are_pages():
    png = make.image_bytes(make.text_image([EN_LINES[0], ZH_LINES[0]]))
    assert _doc(png, ".png").pages == [Page(1, f"{EN_LINES[0]}\n{ZH_LINES[0]}")]
    jpg = make.image_bytes(make.text_image([ZH_LINES[1]]), "JPEG", quality=90)
    assert _doc(jpg, ".jpg").text == ZH_LINES[1]
    frames = [make.text_image([EN_LINES[1]]), make.text_image([ZH_LINES[0]])]
    tiff = make.image_bytes(frames[0], "TIFF", save_all=True, append_images=frames[1:])
    assert _doc(tiff, ".tiff").pages == [Page(1, EN_LINES[1]), Page(2, ZH_LINES[0])]


@pytest.mark.integration
def test_an_image_without_text_is_a_clear_error():
    from PIL import Image

    blank = make.image_bytes(Image.new("RGB", (600, 400), "white"))
    with pytest.raises(KBLoadError, match="no text found in the image"):
        _doc(blank, ".png")


def test_a_file_that_is_not_an_image_is_a_clear_error():
    with pytest.raises(KBLoadError, match="not a readable image"):
        _doc(b"definitely not a png", ".png")


def test_pptx_slides_are_pages_with_tables_and_notes():
    data = make.pptx(
        [("Welcome", "Goals for the quarter"), ("Plan", "Ship the reader")],
        table=[["Task", "Owner"], ["OCR", "Lin"]],
        notes="Mention the deadline.",
    )
    doc = _doc(data, ".pptx")
    assert doc.title == "Welcome"
    assert doc.pages == [
        Page(1, "Welcome\n\nGoals for the quarter"),
        Page(
            2,
            "Plan\n\nShip the reader\n\n| Task | Owner |\n| --- | --- |\n| OCR | Lin |\n\nNotes: Mention the deadline.",
        ),
    ]


def test_xlsx_rows_are_records_with_their_header():
    data = make.xlsx(
        {
            "People": [["Name", "Born", None], ["Ada", 1815, "London"], [None, None, None], ["Alan", 1912.0, ""]],
            "Blank": [],
            "Cities": [["City"], ["Paris"]],
        }
    )
    doc = _doc(data, ".xlsx")
    assert doc.pages == [
        Page(1, "People\nName: Ada; Born: 1815; column 3: London\nName: Alan; Born: 1912"),
        Page(3, "Cities\nCity: Paris"),
    ]
    assert doc.metadata["sheets"] == ["People", "Blank", "Cities"]


def test_csv_rows_are_records_with_their_header():
    doc = _doc(b"name;city\nAda;London\n\nAlan;Wilmslow\n", ".csv")
    assert doc.text == "name: Ada; city: London\nname: Alan; city: Wilmslow"
    assert doc.pages is None


def test_epub_chapters_are_pages_in_reading_order():
    doc = _doc(make.epub("Field Guide", [("Birds", "Robins sing at dawn."), ("Trees", "Oaks live long.")]), ".epub")
    assert doc.title == "Field Guide"
    assert doc.pages == [Page(1, "Birds\n\nRobins sing at dawn."), Page(2, "Trees\n\nOaks live long.")]


@pytest.mark.parametrize("suffix", [".pptx", ".xlsx", ".epub"])
def test_corrupt_office_files_and_ebooks_are_clear_errors(suffix):
    with pytest.raises(KBLoadError, match=f"corrupt or unreadable \\{suffix}"):
        _doc(b"PK\x03\x04 not really a zip", suffix)


def test_a_format_whose_extra_is_missing_says_what_to_install(monkeypatch):
    import sys

    data = make.pptx([("A", "b")])
    monkeypatch.setitem(sys.modules, "pptx", None)  # import pptx now raises ImportError
    with pytest.raises(
        KBLoadError, match=r"reading slides \(\.pptx\) needs 'pptx': pip install 'reasonloop\[documents\]'"
    ):
        _doc(data, ".pptx")


def test_a_scanned_pdf_without_the_ocr_engine_says_what_to_install(monkeypatch):
    import sys

    from reasonloop.kb.ingest.loaders import ocr

    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)
    monkeypatch.setattr(ocr, "_engine", None)
    with pytest.raises(KBLoadError, match=r"scanned PDF; reading it needs OCR: pip install 'reasonloop\[documents\]'"):
        _doc(make.scanned_pdf([EN_LINES]), ".pdf")


def test_password_protected_pdf_is_a_clear_error():
    with pytest.raises(KBLoadError, match="protected by a password"):
        _doc(make.encrypted_pdf("Secret plans.", "hunter2"), ".pdf")


def test_corrupt_pdf_is_a_clear_error():
    data = make.text_pdf(["Some text on a page."])
    with pytest.raises(KBLoadError, match="corrupt or unreadable PDF"):
        _doc(b"%PDF-1.4\n" + data[400:900], ".pdf")


@pytest.mark.integration
def test_a_500_page_pdf_reports_every_page():
    data = make.text_pdf([f"Page {i} of the long manual." for i in range(1, 501)])
    seen: list[tuple[int, int]] = []
    doc = _doc(data, ".pdf", on_page=lambda done, total: seen.append((done, total)))
    assert seen == [(n, 500) for n in range(1, 501)]
    assert len(doc.pages or []) == 500 and doc.pages[-1] == Page(500, "Page 500 of the long manual.")


@pytest.mark.integration
def test_reading_a_long_pdf_keeps_the_memory_of_one_page():
    data = make.text_pdf([f"Line {i} " * 12 for i in range(120)])
    tracemalloc.start()
    at: dict[int, int] = {}

    def mark(done: int, total: int) -> None:
        if done in (20, 120):
            at[done] = tracemalloc.get_traced_memory()[0]

    try:
        _doc(data, ".pdf", on_page=mark)
    finally:
        tracemalloc.stop()
    # Parsed pages kept alive would add ~60 kB each (6 MB over these 100 pages).
    assert at[120] - at[20] < 1_500_000, at
