"""The ``[kb]`` section of the configuration: where the knowledge base lives and how it is searched,
and ``[kb.limits]``, what one file may cost while it is parsed. Re-exported by :mod:`reasonloop.config`,
which most code imports them from."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reasonloop.config.tools import Section

__all__ = ["KBSettings", "ParseLimits"]

_MB = 1024 * 1024


class ParseLimits(BaseModel):
    """``[kb.limits]``: what one file may cost while it is parsed."""

    model_config = ConfigDict(extra="forbid")

    max_member_bytes: int = Field(default=256 * _MB, gt=0)
    """Largest unpacked size of one member of an office file or e-book (a zip container)."""
    max_unpacked_bytes: int = Field(default=1024 * _MB, gt=0)
    """Largest unpacked size of all the members of one container."""
    max_ratio: float = Field(default=100.0, gt=1)
    """Largest compression ratio (unpacked / packed) of a member over 1 MB unpacked."""
    max_pixels: int = Field(default=50_000_000, gt=0)
    """Most pixels (width × height) of an image decoded or a page rendered for OCR; a larger PDF
    page is rendered at the scale that gives this many, a larger image fails."""
    memory_mb: int = Field(default=2048, ge=256)
    """Address space of a parsing worker process (``RLIMIT_AS``)."""
    cpu_s: int = Field(default=600, gt=0)
    """CPU seconds a parsing worker may spend on one file (``RLIMIT_CPU``)."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Wall-clock seconds one file may take to parse; then its worker is killed."""
    workers: int = Field(default=0, ge=0)
    """Files parsed at once, each in its own worker process; 0 means the machine's cores (at most 4)."""
    files_per_worker: int = Field(default=64, ge=1)
    """Files a worker parses before a fresh one takes over (any failure retires it at once)."""


class KBSettings(Section):
    """Where the knowledge base lives and how it is searched."""

    path: str = ".reasonloop"
    index: str = "local"
    embedder: str = "e5"
    options: dict[str, Any] = Field(default_factory=dict)
    """Options for the chosen index and embedder (chunk size, RRF k, qdrant url, ...)."""
    limits: ParseLimits = Field(default_factory=ParseLimits)
    """What one file may cost while it is parsed: unpacked sizes, pixels, memory, time (``[kb.limits]``)."""
