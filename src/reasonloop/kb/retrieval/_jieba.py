"""jieba's tokenizer with its prepared dictionary cached per user, read back by each process.

Why: preparing jieba's prefix dictionary from its word list costs every new process about 2 s,
and so does jieba's own reading of its cache file (``marshal.load`` from a file object);
reading the same file as bytes costs about half (benchmarks/README.md, "Design notes: jieba's
dictionary cache").

The cache is jieba's own file, ``$XDG_CACHE_HOME/reasonloop/jieba-<version>.cache``
(``~/.cache/reasonloop/...`` without the variable), prepared and written atomically by jieba
the first time. A cache that cannot be read is prepared anew and rewritten; where the
directory cannot be written, each process prepares the dictionary in memory.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jieba

__all__ = ["cache_dir", "load", "tokenizer"]

_lock = threading.Lock()
_tokenizer: jieba.Tokenizer | None = None


def cache_dir() -> Path:
    """Where the dictionary cache lives: ``$XDG_CACHE_HOME/reasonloop``, else ``~/.cache/reasonloop``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "reasonloop"


def tokenizer() -> jieba.Tokenizer:
    """The process's tokenizer, loaded on first use (jieba itself is imported then, not before)."""
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            _tokenizer = load(cache_dir())
        return _tokenizer


def load(directory: Path) -> jieba.Tokenizer:
    """A tokenizer with its dictionary ready: read from the cache in ``directory``, or prepared
    by jieba, which writes the cache there."""
    with warnings.catch_warnings():  # jieba imports pkg_resources, deprecated: not the user's concern
        warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)
        import jieba

    jieba.setLogLevel(60)  # its progress lines, and its note when the cache cannot be written
    cache = directory / f"jieba-{jieba.__version__}.cache"
    tok = jieba.Tokenizer()
    prepared = _read(cache)
    if prepared is not None:
        tok.FREQ, tok.total = prepared  # what jieba's initialize() keeps from its cache
        tok.initialized = True
        return tok
    with contextlib.suppress(OSError):  # unwritable: jieba fails to write the cache and goes on
        directory.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):  # jieba would take an unreadable cache's content as it is
        cache.unlink()
    if cache.exists():  # it could not be removed: keep jieba away from it
        cache = directory / ".unwritable" / cache.name
    tok.tmp_dir, tok.cache_file = str(cache.parent), cache.name
    tok.initialize()
    return tok


def _read(cache: Path) -> tuple[dict[str, int], Any] | None:
    """jieba's (frequencies, total) from ``cache``, or None when it is missing or not jieba's."""
    try:
        freq, total = marshal.loads(cache.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(freq, dict) or not freq or not isinstance(total, int | float) or total <= 0:
        return None
    return freq, total
