"""Limits that hold whatever a file says (``[kb.limits]``), and the checks made before a parser
sees a file.

A file given to the knowledge base may be made to hurt the pipeline: an office file whose
member inflates to gigabytes, XML whose entities expand a thousandfold, an image or a PDF page
that decodes to billions of pixels. The checks here refuse such a file before any memory is
spent on it, with a reason in our words; the worker processes of :mod:`reasonloop.kb.ingest.parsing`
bound the memory and time of everything else a parser does.

- :func:`check_archive`: every member of a zip container (``.docx`` ``.xlsx`` ``.pptx``
  ``.epub``) within ``max_member_bytes`` unpacked and ``max_ratio`` compressed, the whole within
  ``max_unpacked_bytes``. The declared sizes are enough: Python's :mod:`zipfile`, which every
  loader reads the members through, stops a member at its declared size (a member that says
  less than it holds fails its CRC check).
- :func:`refuse_entities`: the prolog of each XML member parsed with ``defusedxml``, which
  refuses entity declarations (the "billion laughs") and external references; the DOCTYPE of
  XHTML chapters is allowed.
- :func:`check_pixels`: an image's pixels counted from its header before it is decoded.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from reasonloop.config import ParseLimits
from reasonloop.errors import KBLoadError

__all__ = [
    "ParseLimits",
    "check_archive",
    "check_pixels",
    "failure_reason",
    "human_bytes",
    "refuse_entities",
]

MB = 1024 * 1024

_XML_SUFFIXES = (".xml", ".rels", ".xhtml", ".html", ".htm", ".opf", ".ncx", ".svg")
_RATIO_FLOOR = 1 * MB
"""Members smaller than this unpacked are not held to the ratio (a small run of zeros is harmless)."""


def human_bytes(n: float) -> str:
    """``2.0 GB``, ``256 MB``, ``12 KB``, ``300 bytes`` (powers of 1024)."""
    for unit, size in (("GB", 1024**3), ("MB", MB), ("KB", 1024)):
        if n >= size:
            value = n / size
            return f"{value:.1f} {unit}" if value < 10 and value != int(value) else f"{value:.0f} {unit}"
    return f"{int(n)} bytes"


def check_archive(data: bytes, source: str, limits: ParseLimits) -> None:
    """Refuse a zip container any of whose members unpacks past the limits.

    Raises:
        KBLoadError: too large when unpacked, or compressed past the ratio. A file that is not a
            readable zip passes: its loader says how it is damaged.
    """
    try:
        members = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return
    total = 0
    for info in members:
        size = info.file_size
        total += size
        if size > limits.max_member_bytes:
            raise KBLoadError(
                f"{source}: too large when unpacked: {human_bytes(size)} > {human_bytes(limits.max_member_bytes)}"
                f" ({info.filename})",
                source=source,
            )
        if size > _RATIO_FLOOR and size > limits.max_ratio * max(info.compress_size, 1):
            ratio = size / max(info.compress_size, 1)
            raise KBLoadError(
                f"{source}: compressed too far: {info.filename} unpacks {ratio:.0f} times its size"
                f" (limit {limits.max_ratio:g})",
                source=source,
            )
    if total > limits.max_unpacked_bytes:
        raise KBLoadError(
            f"{source}: too large when unpacked: {human_bytes(total)} > {human_bytes(limits.max_unpacked_bytes)}",
            source=source,
        )


def refuse_entities(data: bytes, source: str) -> None:
    """Refuse a zip container whose XML members declare entities or reference external ones.

    Only the prolog of each member is parsed (up to its first element): that is where a DTD is.

    Raises:
        KBLoadError: ``entity expansion refused``.
    """
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import iterparse

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = [i for i in archive.infolist() if i.filename.lower().endswith(_XML_SUFFIXES)]
    except (zipfile.BadZipFile, ValueError, OSError):
        return
    for info in members:
        try:
            with archive.open(info) as stream:
                for _event in iterparse(stream, events=("start",), forbid_dtd=False):
                    break  # the first element: the prolog, and any DTD, is behind us
        except DefusedXmlException as exc:
            raise KBLoadError(f"{source}: entity expansion refused ({info.filename})", source=source) from exc
        except Exception:
            continue


def check_pixels(width: int, height: int, source: str, limits: ParseLimits) -> None:
    """Refuse an image of more than ``max_pixels`` pixels.

    Raises:
        KBLoadError: ``image of N million pixels exceeds the limit``.
    """
    if width * height > limits.max_pixels:
        raise KBLoadError(f"{source}: {_pixels_message(width * height, limits)}", source=source)


def _pixels_message(pixels: int, limits: ParseLimits) -> str:
    return (
        f"image of {pixels / 1e6:,.0f} million pixels exceeds the limit of {limits.max_pixels / 1e6:,.0f} million"
        " ([kb.limits] max_pixels)"
    )


def failure_reason(exc: BaseException, limits: ParseLimits) -> str:
    """What went wrong while a file was parsed, in our words, for any exception a parser raised."""
    if isinstance(exc, KBLoadError):
        return exc.message
    name = type(exc).__name__
    if name in ("DecompressionBombError", "DecompressionBombWarning"):
        import re

        numbers = [int(n) for n in re.findall(r"\d+", str(exc))]
        pixels = numbers[0] if numbers else limits.max_pixels + 1
        return _pixels_message(pixels, limits)
    if name == "DTDForbidden":  # openpyxl reads through defusedxml, which takes no DTD at all
        return "document type declaration (DTD) refused: office files have none"
    if name in ("EntitiesForbidden", "ExternalReferenceForbidden", "NotSupportedError"):
        return "entity expansion refused"
    if isinstance(exc, MemoryError):
        return f"needs more memory than the limit of {limits.memory_mb} MB ([kb.limits] memory_mb)"
    if isinstance(exc, RecursionError):
        return "nested too deeply to parse"
    message = _short(str(exc))
    if "entit" in message.lower() and ("loop" in message.lower() or "amplification" in message.lower()):
        return "entity expansion refused"
    return f"could not be parsed ({name}: {message})" if message else f"could not be parsed ({name})"


def _short(text: Any, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
