"""Evaluation sets read from files: retrieval sets, question-answering sets, routing sets.

Every reader checks what it needs and raises one :class:`~reasonloop.errors.EvalDataError`
naming the file, the line (for JSONL) and the field, before any work starts.

Formats:

- **Retrieval**: a BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``), or a
  JSONL of ``{"question", "relevant": [doc ids]}`` (optional ``id``) with a corpus JSONL of
  ``{"id", "title", "text"}``.
- **QA**: HotpotQA (``question_text`` or ``question``, ``answers_objects`` or ``answer``,
  ``contexts`` with ``title``, ``paragraph_text``, ``is_supporting``), MuSiQue (a JSON list of
  ``question``, ``answer``, ``answer_aliases``, ``paragraphs`` as HotpotQA's contexts), SQuAD (``data`` →
  ``paragraphs`` → ``qas``: CMRC 2018), or a JSONL of ``{"question", "answers", "gold_ids"?}``
  (optional ``id``, ``group``, ``answerable``, ``evidence``) with an optional corpus: a corpus
  JSONL, or a folder of documents (``.md``, ``.markdown``, ``.txt``; a document's id is its
  path in the folder, its title the Markdown file's first ``# heading``). A question with
  ``"answerable": false`` has no answer in the documents and no ``answers`` (or an empty list).
- **Routing**: a JSONL of ``{"question", "tools": [names]}`` (an empty list: no tool).
"""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reasonloop.eval.data_fields import bad_data, read_json, read_jsonl, str_list_field, text_field

__all__ = [
    "HOP_LABELS",
    "Doc",
    "QAItem",
    "QASet",
    "RetrievalSet",
    "RoutingItem",
    "load_corpus",
    "load_corpus_folder",
    "load_qa_set",
    "load_retrieval_set",
    "load_routing_set",
    "subsample",
]


@dataclass(frozen=True, slots=True)
class Doc:
    """One document of a corpus."""

    id: str
    title: str
    text: str


@dataclass
class RetrievalSet:
    """Documents, queries and graded relevance ``qrels[query_id][doc_id]``."""

    name: str
    docs: list[Doc]
    queries: list[tuple[str, str]]
    qrels: dict[str, dict[str, int]]


@dataclass(frozen=True, slots=True)
class QAItem:
    """A question, its accepted answers and the documents that support it (when known)."""

    id: str
    question: str
    answers: tuple[str, ...]
    gold_ids: tuple[str, ...] = ()
    context_ids: tuple[str, ...] = ()
    """The documents the set gives with this question (HotpotQA's ten paragraphs, SQuAD's one)."""
    group: str = ""
    """The kind of question, for per-group figures (``yes_no``, ``span``, ``absent``, ...)."""
    answerable: bool = True
    """False when the documents do not hold the answer (then ``answers`` is empty)."""
    evidence: str = ""
    """The sentence of a gold document that decides the question, when the set gives it."""


@dataclass
class QASet:
    name: str
    items: list[QAItem]
    docs: list[Doc] = field(default_factory=list)
    """The knowledge base the questions are asked over (empty: use an existing one)."""

    def select(self, limit: int | None = None, seed: int | None = None, *, own_docs: bool = False) -> QASet:
        """The first ``limit`` questions (shuffled with ``seed`` first when given); with ``own_docs``,
        only the documents given with those questions (all of the set's otherwise)."""
        items = subsample(self.items, limit, seed)
        docs = self.docs
        if own_docs:
            wanted = {d for item in items for d in (item.context_ids or item.gold_ids)}
            docs = [d for d in self.docs if d.id in wanted]
        return QASet(self.name, items, docs)


@dataclass(frozen=True, slots=True)
class RoutingItem:
    id: str
    question: str
    tools: tuple[str, ...]
    """The tools a good agent calls for this question, possibly none."""
    category: str = ""
    language: str = ""
    hops: str = ""
    """How much searching it needs (``none``, ``single``, ``multi_hop``, ``research``); ``""`` when unlabelled."""
    split: str = ""
    """``dev`` (looked at while the router's rule was written) or ``heldout`` (not looked at)."""


# -- retrieval ------------------------------------------------------------------------------------
def load_corpus(path: Path) -> list[Doc]:
    """A corpus JSONL: ``id`` (or BEIR's ``_id``), ``text``, optional ``title``."""
    docs, seen = [], set()
    for line, obj in read_jsonl(path):
        doc_id = text_field(path, obj, ("_id", "id"), line)
        if doc_id in seen:
            raise bad_data(path, f"duplicate document id {doc_id!r}", line=line, field_name="id")
        seen.add(doc_id)
        docs.append(
            Doc(
                doc_id,
                text_field(path, obj, ("title",), line, empty_ok=True) if "title" in obj else "",
                text_field(path, obj, ("text",), line),
            )
        )
    if not docs:
        raise bad_data(path, "no documents")
    return docs


DOCUMENT_SUFFIXES = (".md", ".markdown", ".txt")


def load_corpus_folder(folder: Path) -> list[Doc]:
    """Every ``.md``, ``.markdown`` and ``.txt`` file under ``folder``, in path order.

    A document's id is its path relative to ``folder`` (``/`` separated); a Markdown file whose
    first non-blank line is a ``# heading`` has it as its title (the text keeps the rest).
    """
    if not folder.is_dir():
        raise bad_data(folder, "folder not found")
    docs = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise bad_data(path, "not UTF-8 text") from None
        title = ""
        lines = text.lstrip().splitlines()
        if path.suffix.lower() != ".txt" and lines and lines[0].startswith("# "):
            title = lines[0][2:].strip()
            text = "\n".join(lines[1:])
        if not text.strip():
            raise bad_data(path, "is empty")
        docs.append(Doc(path.relative_to(folder).as_posix(), title, text.strip()))
    if not docs:
        raise bad_data(folder, f"no documents ({', '.join(DOCUMENT_SUFFIXES)} files)")
    return docs


def _load_docs(corpus: Path) -> list[Doc]:
    """A corpus JSONL or a folder of documents."""
    return load_corpus_folder(corpus) if corpus.is_dir() else load_corpus(corpus)


def _beir(folder: Path, split: str) -> RetrievalSet:
    docs = load_corpus(folder / "corpus.jsonl")
    queries = {}
    qpath = folder / "queries.jsonl"
    for line, obj in read_jsonl(qpath):
        queries[text_field(qpath, obj, ("_id", "id"), line)] = text_field(qpath, obj, ("text",), line)
    rpath = folder / "qrels" / f"{split}.tsv"
    if not rpath.is_file():
        raise bad_data(rpath, "file not found (--split picks qrels/<split>.tsv)")
    qrels: dict[str, dict[str, int]] = {}
    with rpath.open(encoding="utf-8", newline="") as fh:
        for number, row in enumerate(csv.reader(fh, delimiter="\t"), start=1):
            if not row or (number == 1 and not row[-1].strip().lstrip("-").isdigit()):
                continue  # blank line or header
            if len(row) < 3:
                raise bad_data(rpath, "expected query-id, corpus-id, score", line=number)
            try:
                grade = int(row[-1])
            except ValueError:
                raise bad_data(rpath, f"score {row[-1]!r} is not an integer", line=number, field_name="score") from None
            qid, did = row[0], row[-2]
            if qid not in queries:
                raise bad_data(rpath, f"query {qid!r} is not in queries.jsonl", line=number, field_name="query-id")
            qrels.setdefault(qid, {})[did] = grade
    return RetrievalSet(folder.name, docs, [(q, queries[q]) for q in qrels], qrels)


def _retrieval_jsonl(path: Path, corpus: Path | None) -> RetrievalSet:
    if corpus is None:
        raise bad_data(path, "a question JSONL needs its documents: pass a corpus JSONL (id, title, text) or a folder")
    docs = _load_docs(corpus)
    known = {d.id for d in docs}
    queries, qrels = [], {}
    for line, obj in read_jsonl(path):
        qid = str(obj.get("id", f"q{line}"))
        question = text_field(path, obj, ("question", "query", "text"), line)
        relevant = str_list_field(path, obj, "relevant", line)
        unknown = [d for d in relevant if d not in known]
        if unknown:
            raise bad_data(path, f"document {unknown[0]!r} is not in {corpus}", line=line, field_name="relevant")
        queries.append((qid, question))
        qrels[qid] = dict.fromkeys(relevant, 1)
    if not queries:
        raise bad_data(path, "no questions")
    return RetrievalSet(path.stem, docs, queries, qrels)


def _squad_docs_and_items(path: Path) -> tuple[list[Doc], list[QAItem]]:
    data = read_json(path)
    articles = data.get("data") if isinstance(data, dict) else None
    if not isinstance(articles, list):
        raise bad_data(path, "not SQuAD format", field_name="data")
    docs, items = [], []
    for a, article in enumerate(articles):
        for p, para in enumerate(article.get("paragraphs") or []):
            where = f"data[{a}].paragraphs[{p}]"
            if not isinstance(para, dict) or not isinstance(para.get("context"), str):
                raise bad_data(path, "missing", field_name=f"{where}.context")
            doc_id = str(para.get("id") or f"{a}-{p}")
            docs.append(Doc(doc_id, str(article.get("title") or ""), para["context"]))
            for q, qa in enumerate(para.get("qas") or []):
                answers = [x.get("text", "") for x in qa.get("answers") or [] if isinstance(x, dict)]
                answers = [x for x in answers if x.strip()]
                if not isinstance(qa.get("question"), str) or not answers:
                    missing = "question" if not isinstance(qa.get("question"), str) else "answers"
                    raise bad_data(path, "missing", field_name=f"{where}.qas[{q}].{missing}")
                qid = str(qa.get("id") or f"{doc_id}-{q}")
                items.append(QAItem(qid, qa["question"], tuple(answers), (doc_id,), (doc_id,)))
    if not items:
        raise bad_data(path, "no questions", field_name="data")
    return docs, items


def load_retrieval_set(path: str | Path, *, corpus: str | Path | None = None, split: str = "test") -> RetrievalSet:
    """A retrieval set from a BEIR folder, a SQuAD JSON file or a question JSONL (with ``corpus``).

    Raises:
        EvalDataError: a missing file or field, named with its line.
    """
    path = Path(path)
    if path.is_dir():
        return _beir(path, split)
    if path.suffix == ".json":
        docs, items = _squad_docs_and_items(path)
        return RetrievalSet(
            path.stem, docs, [(i.id, i.question) for i in items], {i.id: {i.gold_ids[0]: 1} for i in items}
        )
    return _retrieval_jsonl(path, Path(corpus) if corpus else None)


# -- question answering ---------------------------------------------------------------------------
def _hotpot_row(path: Path, line: int, obj: dict[str, Any], docs: dict[str, Doc]) -> QAItem:
    question = text_field(path, obj, ("question_text", "question"), line)
    if "answers_objects" in obj:
        answers = [s for a in obj["answers_objects"] or [] if isinstance(a, dict) for s in a.get("spans") or []]
        if not answers:
            raise bad_data(path, "no answer span", line=line, field_name="answers_objects")
    else:
        answers = str_list_field(path, obj, "answer", line)
    contexts = obj.get("contexts")
    if not isinstance(contexts, list) or not contexts:
        raise bad_data(path, "missing", line=line, field_name="contexts")
    gold, titles = [], []
    for i, ctx in enumerate(contexts):
        if not isinstance(ctx, dict):
            raise bad_data(path, "expected an object", line=line, field_name=f"contexts[{i}]")
        title = text_field(path, ctx, ("title",), line)
        text = text_field(path, ctx, ("paragraph_text", "text"), line)
        doc_id, n = title, 1
        while doc_id in docs and docs[doc_id].text != text:  # another paragraph under the same title
            n += 1
            doc_id = f"{title} ({n})"
        docs.setdefault(doc_id, Doc(doc_id, title, text))
        titles.append(doc_id)
        if ctx.get("is_supporting"):
            gold.append(doc_id)
    qid = str(obj.get("question_id") or obj.get("id") or f"q{line}")
    return QAItem(qid, question, tuple(answers), tuple(gold), tuple(titles))


def load_qa_set(path: str | Path, *, corpus: str | Path | None = None) -> QASet:
    """A QA set: HotpotQA JSONL, SQuAD JSON (CMRC 2018) or a question JSONL with an optional corpus
    (a corpus JSONL or a folder of documents).

    HotpotQA paragraphs are keyed by title (titles are unique in the set) and pooled over all
    questions into the knowledge base; a SQuAD paragraph is a document.

    Raises:
        EvalDataError: a missing file or field, named with its line.
    """
    path = Path(path)
    rows: list[tuple[int, dict[str, Any]]]
    if path.suffix == ".json":
        data = read_json(path)
        if not (isinstance(data, list) and data and isinstance(data[0], dict) and "paragraphs" in data[0]):
            docs, items = _squad_docs_and_items(path)
            return QASet(path.stem, items, docs)
        rows = [(i + 1, _musique_row(obj)) for i, obj in enumerate(data)]  # MuSiQue: a list of questions
    else:
        rows = list(read_jsonl(path))
    pool: dict[str, Doc] = {}
    items: list[QAItem] = []
    if not rows:
        raise bad_data(path, "no questions")
    hotpot = "contexts" in rows[0][1]
    lines: dict[str, int] = {}
    for line, obj in rows:
        item = _hotpot_row(path, line, obj, pool) if hotpot else _question_row(path, line, obj)
        if item.id in lines:
            raise bad_data(path, f"id {item.id!r} repeats line {lines[item.id]}", line=line, field_name="id")
        lines[item.id] = line
        items.append(item)
    docs = list(pool.values()) if hotpot else (_load_docs(Path(corpus)) if corpus else [])
    if docs and not hotpot:
        known = {d.id for d in docs}
        for item in items:
            for gold_id in item.gold_ids:
                if gold_id not in known:
                    raise bad_data(
                        path,
                        f"gold document {gold_id!r} is not in {corpus}",
                        line=lines[item.id],
                        field_name="gold_ids",
                    )
    return QASet(path.stem, items, docs)


def _musique_row(obj: Any) -> dict[str, Any]:
    """A MuSiQue question (``paragraphs``, ``answer``, ``answer_aliases``) in HotpotQA's shape."""
    if not isinstance(obj, dict):
        return {}
    answers = [obj.get("answer"), *(obj.get("answer_aliases") or [])]
    return {
        "id": obj.get("id"),
        "question": obj.get("question"),
        "answer": [a for a in answers if isinstance(a, str) and a.strip()],
        "contexts": obj.get("paragraphs"),
    }


def _question_row(path: Path, line: int, obj: dict[str, Any]) -> QAItem:
    """One line of a question JSONL: ``question``, ``answers`` (or ``answer``) and the optional fields."""
    question = text_field(path, obj, ("question",), line)
    answerable = obj.get("answerable", True)
    if not isinstance(answerable, bool):
        raise bad_data(path, "expected true or false", line=line, field_name="answerable")
    if answerable:
        if "answers" not in obj and "answer" not in obj:
            raise bad_data(
                path, "missing (a list of accepted answers, or answerable: false)", line=line, field_name="answers"
            )
        answers = (
            str_list_field(path, obj, "answers", line)
            if "answers" in obj
            else str_list_field(path, obj, "answer", line)
        )
        answers = [a for a in answers if a.strip()]
        if not answers:
            raise bad_data(path, "is empty", line=line, field_name="answers")
    else:
        answers = str_list_field(path, obj, "answers", line, required=False)
        if any(a.strip() for a in answers):
            raise bad_data(path, "an unanswerable question has no answers", line=line, field_name="answers")
        answers = []
    group = text_field(path, obj, ("group",), line) if "group" in obj else ""
    evidence = text_field(path, obj, ("evidence",), line) if "evidence" in obj else ""
    gold = str_list_field(path, obj, "gold_ids", line, required=False)
    qid = text_field(path, obj, ("id",), line) if "id" in obj else f"q{line}"
    return QAItem(
        qid, question, tuple(answers), tuple(gold), group=group.strip(), answerable=answerable, evidence=evidence
    )


# -- routing ------------------------------------------------------------------------------------
HOP_LABELS = ("", "none", "single", "multi_hop", "research")
"""A routing item's ``hops``: unlabelled, then the routes of the ``auto`` mode."""


def load_routing_set(path: str | Path) -> list[RoutingItem]:
    """A routing JSONL: ``question``, ``tools`` (list, possibly empty), optional ``id``, ``category``,
    ``language``, ``hops`` (``none``, ``single``, ``multi_hop`` or ``research``) and ``split``.

    Raises:
        EvalDataError: a missing file or field, named with its line.
    """
    path = Path(path)
    items = []
    for line, obj in read_jsonl(path):
        question = text_field(path, obj, ("question",), line)
        tools = str_list_field(path, obj, "tools", line)
        hops = obj.get("hops", "")
        if hops not in HOP_LABELS:
            raise bad_data(
                path, f"hops must be one of {', '.join(HOP_LABELS[1:])} (got {hops!r})", line=line, field_name="hops"
            )
        items.append(
            RoutingItem(
                str(obj.get("id", f"r{line}")),
                question,
                tuple(tools),
                str(obj.get("category", "")),
                str(obj.get("language", "")),
                hops,
                str(obj.get("split", "")),
            )
        )
    if not items:
        raise bad_data(path, "no questions")
    return items


def subsample(items: list[Any], limit: int | None, seed: int | None) -> list[Any]:
    """The first ``limit`` items, after a shuffle with ``seed`` when one is given (same seed, same subset)."""
    chosen = list(items)
    if seed is not None:
        random.Random(seed).shuffle(chosen)
    return chosen[:limit] if limit else chosen
