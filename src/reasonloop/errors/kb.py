"""Errors of the knowledge base: a file it cannot load or take, a document it does not hold, an index
built with another embedding model, a backend that is not there. Re-exported by :mod:`reasonloop.errors`."""

from __future__ import annotations

from reasonloop.errors.base import ReasonLoopError

__all__ = [
    "DocumentNotFound",
    "KBEmpty",
    "KBError",
    "KBLoadError",
    "KBModelMismatch",
    "KBUnavailable",
    "UploadTooLarge",
]


class KBError(ReasonLoopError):
    code = "kb.error"


class KBEmpty(KBError):
    """A search of a knowledge base that holds no documents yet."""

    code = "kb.empty"


class KBModelMismatch(KBError):
    code = "kb.model_mismatch"


class KBLoadError(KBError):
    code = "kb.load_error"


class KBUnavailable(KBError):
    """The knowledge-base module or its backend is not available."""

    code = "kb.unavailable"


class DocumentNotFound(KBError):
    code = "kb.document_not_found"


class UploadTooLarge(KBError):
    """An uploaded file is over the server's size limit."""

    code = "kb.upload_too_large"
