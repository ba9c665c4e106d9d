"""Files made to hurt a document pipeline, built at test time: archive bombs, entity expansion,
decompression-bomb images, poster-sized scanned pages."""

from __future__ import annotations

import functools
import io
import re
import struct
import time
import zipfile
import zlib
from collections.abc import Sequence

from . import documents
from .helpers import make_docx

MAIN_MEMBER = {
    "docx": "word/document.xml",
    "xlsx": "xl/worksheets/sheet1.xml",
    "pptx": "ppt/slides/slide1.xml",
    "epub": "EPUB/ch1.xhtml",
}
"""The member of each format that holds its text."""


def good(fmt: str, words: str) -> bytes:
    """A real file of format ``fmt`` whose text holds ``words``."""
    if fmt == "docx":
        return make_docx([words])
    if fmt == "xlsx":
        return documents.xlsx({"Sheet": [["Note"], [words]]})
    if fmt == "pptx":
        return documents.pptx([("Slide", words)])
    if fmt == "epub":
        return documents.epub("Book", [("Chapter", words)])
    raise ValueError(fmt)


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def rezip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, body in files.items():
            z.writestr(name, body, compress_type=zipfile.ZIP_STORED if name == "mimetype" else zipfile.ZIP_DEFLATED)
    return buf.getvalue()


@functools.cache
def _spaces_deflated(size: int) -> tuple[bytes, int]:
    """Raw deflate of ``size`` spaces and their CRC-32, made from one compressed block repeated."""
    block = 16 * 1024 * 1024
    assert size % block == 0
    chunk = b" " * block
    first = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = first.compress(chunk) + first.flush(zlib.Z_FULL_FLUSH)
    # After a full flush the compressor starts afresh, so every further block compresses alike.
    again = first.compress(chunk) + first.flush(zlib.Z_FULL_FLUSH)
    tail = first.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(size // block):
        crc = zlib.crc32(chunk, crc)
    return head + again * (size // block - 1) + tail, crc


def _dos_time() -> tuple[int, int]:
    t = time.localtime()
    return (t.tm_hour << 11) | (t.tm_min << 5) | (t.tm_sec // 2), ((t.tm_year - 1980) << 9) | (
        t.tm_mon << 5
    ) | t.tm_mday


def zip_bomb(fmt: str, words: str, size: int = 3 * 1024**3 - 3 * 16 * 1024**2) -> bytes:
    """A real ``fmt`` file whose main member is ``size`` spaces (a few GB), deflated to a few MB.

    Written by hand: :mod:`zipfile` would have to deflate the gigabytes itself.
    """
    files = members(good(fmt, words))
    bomb_name = MAIN_MEMBER[fmt]
    bomb, crc = _spaces_deflated(size)
    mod_time, mod_date = _dos_time()
    out = io.BytesIO()
    central = io.BytesIO()
    count = 0
    for name, body in files.items():
        if name == bomb_name:
            method, packed, usize, ccrc = 8, bomb, size, crc
        else:
            method, usize, ccrc = 0, len(body), zlib.crc32(body)
            packed = body
        encoded = name.encode()
        offset = out.tell()
        out.write(
            struct.pack(
                "<IHHHHHIIIHH", 0x04034B50, 20, 0, method, mod_time, mod_date, ccrc, len(packed), usize, len(encoded), 0
            )
        )
        out.write(encoded)
        out.write(packed)
        central.write(
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50, 20, 20, 0, method, mod_time, mod_date, ccrc, len(packed), usize,
                len(encoded), 0, 0, 0, 0, 0, offset,
            )
        )  # fmt: skip
        central.write(encoded)
        count += 1
    cd_offset = out.tell()
    out.write(central.getvalue())
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, len(central.getvalue()), cd_offset, 0))
    return out.getvalue()


LAUGHS = (
    '<!DOCTYPE lolz [<!ENTITY lol "lollollollollollollollollollol">'
    + "".join(f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 10))
    + "]>"
)
"""A DTD whose ``&lol9;`` expands to 10^9 × 30 characters (the "billion laughs")."""


def _with_doctype(xml: bytes, doctype: str, entity: str | None) -> bytes:
    text = xml.decode("utf-8")
    declaration = re.match(r"\s*<\?xml[^>]*\?>", text)
    prolog, rest = (text[: declaration.end()], text[declaration.end() :]) if declaration else ("", text)
    rest = re.sub(r"<!DOCTYPE[^>]*>", "", rest, count=1)
    if entity:  # the entity where the text is: the first text node after the root's opening
        rest = re.sub(r">([^<>\s][^<>]*)<", lambda m: f">{m.group(1)} &{entity};<", rest, count=1)
    return (prolog + "\n" + doctype + rest).encode("utf-8")


def laughs(fmt: str, words: str) -> bytes:
    """A real ``fmt`` file whose main member declares the billion laughs and uses them."""
    files = members(good(fmt, words))
    files[MAIN_MEMBER[fmt]] = _with_doctype(files[MAIN_MEMBER[fmt]], LAUGHS, "lol9")
    return rezip(files)


def with_doctype(fmt: str, words: str, doctype: str, entity: str | None = None) -> bytes:
    """A real ``fmt`` file whose main member has ``doctype`` (and uses ``entity``)."""
    files = members(good(fmt, words))
    files[MAIN_MEMBER[fmt]] = _with_doctype(files[MAIN_MEMBER[fmt]], doctype, entity)
    return rezip(files)


def png_bomb(width: int = 30_000, height: int = 30_000) -> bytes:
    """A 1-bit PNG of ``width`` × ``height`` white pixels: a few hundred KB, 900 million pixels."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    row = b"\x00" + b"\xff" * ((width + 7) // 8)
    packer = zlib.compressobj(9)
    rows = 1000
    block = row * rows
    idat = b"".join(packer.compress(block) for _ in range(height // rows)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def poster_scan(lines: Sequence[str], side: float = 14_400) -> bytes:
    """An image-only PDF page of ``side`` × ``side`` units (the largest a PDF page may be): a
    small picture of ``lines`` stretched over the whole page, no text layer."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import NameObject, NumberObject, RectangleObject

    image = documents.text_image(lines, size=40, width=1000)
    square = image.crop((0, 0, 1000, 1000)) if image.height >= 1000 else _pad(image)
    reader = PdfReader(io.BytesIO(documents.image_bytes(square, "PDF", resolution=1000 * 72 / side)))
    writer = PdfWriter()
    page = writer.add_page(reader.pages[0])
    box = RectangleObject([0, 0, side, side])
    page[NameObject("/MediaBox")] = box
    page[NameObject("/CropBox")] = box
    page[NameObject("/Rotate")] = NumberObject(0)
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def _pad(image):
    from PIL import Image

    square = Image.new("RGB", (1000, 1000), "white")
    square.paste(image, (0, 0))
    return square
