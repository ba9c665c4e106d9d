"""Word ``.docx`` (python-docx): paragraphs, then table rows as ``a | b`` lines."""

from __future__ import annotations

import io

from reasonloop.errors import KBLoadError
from reasonloop.kb.ingest.loaders.document import LoadedDocument

__all__ = ["load_docx"]


def load_docx(data: bytes, source: str, title: str) -> LoadedDocument:
    import zipfile

    import docx
    from docx.opc.exceptions import PackageNotFoundError

    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise KBLoadError(f"{source}: corrupt or unreadable .docx ({exc})", source=source) from exc
    paragraphs = [p.text for p in document.paragraphs if p.text.strip()]
    for table in document.tables:
        for row in table.rows:
            cells = [c.text.strip() for c in row.cells if c.text.strip()]
            if cells:
                paragraphs.append(" | ".join(cells))
    doc_title = (document.core_properties.title or "").strip()
    if not doc_title:
        heading = next((p.text for p in document.paragraphs if p.style.name.startswith(("Title", "Heading"))), "")
        doc_title = heading.strip()
    return LoadedDocument(
        source=source, title=doc_title or title, text="\n\n".join(paragraphs), metadata={"type": "docx"}
    )
