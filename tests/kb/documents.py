"""Builders of real documents for the loader tests: PDFs with tables, scanned pages, slides,
spreadsheets, e-books, images of text. Everything is generated here; nothing is downloaded."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

CJK_FONTS = (
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc",
)
"""Debian's fonts-noto-cjk (listed in .ci/run), for rendering Chinese into images."""


def cjk_font(size: int):
    from PIL import ImageFont

    for path in CJK_FONTS:
        if Path(path).exists():
            return ImageFont.truetype(path, size)
    raise AssertionError(f"no CJK font at {CJK_FONTS}: apt-get install fonts-noto-cjk (see .ci/run)")


def text_image(lines: Sequence[str], *, size: int = 32, width: int = 1400):
    """A white image with ``lines`` printed in black, as a scanner would see a clean page."""
    from PIL import Image, ImageDraw

    font = cjk_font(size)
    height = 80 + int(size * 1.8) * max(len(lines), 1)
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((40, 40 + i * int(size * 1.8)), line, fill="black", font=font)
    return image


def image_bytes(image, fmt: str = "PNG", **kwargs) -> bytes:
    buf = io.BytesIO()
    image.save(buf, fmt, **kwargs)
    return buf.getvalue()


def scanned_pdf(pages: Sequence[Sequence[str]]) -> bytes:
    """An image-only PDF: each page is a picture of its lines, with no text layer."""
    images = [text_image(lines) for lines in pages]
    buf = io.BytesIO()
    images[0].save(buf, "PDF", resolution=150, save_all=True, append_images=images[1:])
    return buf.getvalue()


def table_pdf(intro: str, rows: Sequence[Sequence[str]], outro: str) -> bytes:
    """A one-page PDF: a paragraph, a ruled table, a paragraph (reportlab)."""
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    buf = io.BytesIO()
    styles = getSampleStyleSheet()
    table = Table([list(r) for r in rows])
    table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.8, colors.black)]))
    story = [
        Paragraph(intro, styles["Normal"]),
        Spacer(1, 12),
        table,
        Spacer(1, 12),
        Paragraph(outro, styles["Normal"]),
    ]
    SimpleDocTemplate(buf, pagesize=A4).build(story)
    return buf.getvalue()


def text_pdf(pages: Sequence[str]) -> bytes:
    """A PDF with a paragraph of real text per page (reportlab canvas, Helvetica)."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    for text in pages:
        y = 780
        for line in text.split("\n"):
            c.drawString(72, y, line)
            y -= 16
        c.showPage()
    c.save()
    return buf.getvalue()


def encrypted_pdf(text: str, password: str) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(text_pdf([text]))))
    writer.encrypt(user_password=password, owner_password=password + "-owner")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def pptx(slides: Sequence[tuple[str, str]], table: Sequence[Sequence[str]] | None = None, notes: str = "") -> bytes:
    """Slides with a title and a body each; the last one gets ``table`` and ``notes``."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    for i, (title, body) in enumerate(slides):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if i == len(slides) - 1:
            if table:
                shape = slide.shapes.add_table(len(table), len(table[0]), Inches(1), Inches(4), Inches(6), Inches(1.5))
                for r, row in enumerate(table):
                    for c, value in enumerate(row):
                        shape.table.cell(r, c).text = value
            if notes:
                slide.notes_slide.notes_text_frame.text = notes
    buf = io.BytesIO()
    deck.save(buf)
    return buf.getvalue()


def xlsx(sheets: dict[str, Sequence[Sequence[object]]]) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
    buf = io.BytesIO()
    book.save(buf)
    return buf.getvalue()


def epub(title: str, chapters: Sequence[tuple[str, str]]) -> bytes:
    from ebooklib import epub as eb

    book = eb.EpubBook()
    book.set_identifier("test-book")
    book.set_title(title)
    book.set_language("en")
    items = []
    for i, (heading, body) in enumerate(chapters, start=1):
        item = eb.EpubHtml(title=heading, file_name=f"ch{i}.xhtml", lang="en")
        item.content = f"<html><body><h1>{heading}</h1><p>{body}</p></body></html>"
        book.add_item(item)
        items.append(item)
    book.toc = items
    book.add_item(eb.EpubNcx())
    book.add_item(eb.EpubNav())
    book.spine = items
    buf = io.BytesIO()
    eb.write_epub(buf, book)
    return buf.getvalue()
