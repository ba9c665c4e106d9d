"""The names files are stored under: text that every surface can carry, whatever the file system holds.

A file name on Linux is bytes, not text: it may not be valid UTF-8 (a name written by another
system in Latin-1, say). Python reads such a name with surrogate escapes, a ``str`` that sqlite,
JSON encoders and terminals refuse. A knowledge base therefore stores a file under
:func:`source_name` of its path: the path itself when it is valid UTF-8, else the path with each
byte that is not part of valid UTF-8 written ``\\xNN`` (``café`` in Latin-1 is ``caf\\xe9``).
:func:`path_of` turns such a name back into the path, to read the file again.
"""

from __future__ import annotations

import os
import re

__all__ = ["path_of", "source_name"]

_ESCAPED = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")


def source_name(path: str) -> str:
    """``path`` as text that can be stored, shown and sent anywhere (valid UTF-8, no surrogates)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return os.fsencode(path).decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate that no file name decodes to
            return path.encode("utf-8", "backslashreplace").decode("utf-8")
    return path


def path_of(name: str) -> str:
    """The file system path stored as ``name`` by :func:`source_name` (``name`` itself when it
    holds no ``\\xNN`` escape of a byte that is not UTF-8). A valid UTF-8 name that holds such an
    escape as text (a backslash, then ``xe9``) is ambiguous: callers that look for the file try
    ``name`` first."""
    if "\\x" not in name:
        return name
    return _ESCAPED.sub(lambda m: chr(0xDC00 + int(m[1], 16)), name)
