"""The evaluation sets of ``retrieval.py``: loaded from ``../shared/data`` and cut to subsets for ``--quick``.

Every set becomes the same shape: documents ``(id, title, text)``, queries ``(id, text)`` and
graded relevance ``qrels[query_id][doc_id] = grade``. Subsets are drawn with a fixed seed, so
a quick run always sees the same documents (and reuses the same cached vectors).
"""

from __future__ import annotations

import csv
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DATA_DIR", "LOADERS", "Dataset", "cmrc2018", "hotpotqa", "load", "missing_files", "scifact"]

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SEED = 20181

Doc = tuple[str, str, str]


@dataclass
class Dataset:
    """One retrieval task.

    Attributes:
        name: Short name used on the command line and in tables.
        docs: ``(id, title, text)`` of the corpus.
        queries: ``(id, text)``, every one with at least one relevant document.
        qrels: ``query id -> {doc id: grade}`` (grade > 0 is relevant).
        options: ``[kb.options]`` the index is built with (chunking).
        subset: Human description of the subset ("full" for the whole set).
    """

    name: str
    docs: list[Doc]
    queries: list[tuple[str, str]]
    qrels: dict[str, dict[str, int]]
    options: dict[str, object] = field(default_factory=dict)
    subset: str = "full"


def _jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def scifact(
    data_dir: Path = DATA_DIR, *, quick: bool = False, n_queries: int = 50, n_distractors: int = 150
) -> Dataset:
    """BEIR SciFact test: 5,183 abstracts, 300 claims; qrels graded (all 1 in this split).

    Each abstract is indexed whole, as one chunk (``chunk_tokens`` 4096; the longest is about 2,400), as BEIR
    scores whole documents; the embedder averages its 512-token windows over a long one.
    Quick: ``n_queries`` claims, their relevant abstracts and ``n_distractors`` random others.
    """
    root = data_dir / "beir_scifact"
    docs = [(str(d["_id"]), d.get("title") or "", d.get("text") or "") for d in _jsonl(root / "corpus.jsonl")]
    text = {str(q["_id"]): q["text"] for q in _jsonl(root / "queries.jsonl")}
    qrels: dict[str, dict[str, int]] = {}
    with (root / "qrels" / "test.tsv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    qids = sorted(qrels, key=int)
    options = {"chunk_tokens": 4096, "chunk_overlap": 0}
    if not quick:
        return Dataset("scifact", docs, [(q, text[q]) for q in qids], qrels, options)
    rng = random.Random(SEED)
    picked = sorted(rng.sample(qids, min(n_queries, len(qids))), key=int)
    relevant = {d for q in picked for d in qrels[q]}
    others = [d for d in docs if d[0] not in relevant]
    distractors = {d[0] for d in rng.sample(others, min(n_distractors, len(others)))}
    sub = [d for d in docs if d[0] in relevant or d[0] in distractors]
    note = f"quick: {len(picked)}/{len(qids)} queries, {len(sub)}/{len(docs)} docs ({len(relevant)} relevant)"
    return Dataset("scifact", sub, [(q, text[q]) for q in picked], {q: qrels[q] for q in picked}, options, note)


def cmrc2018(data_dir: Path = DATA_DIR, *, quick: bool = False, n_paragraphs: int = 100) -> Dataset:
    """CMRC 2018 dev: 848 Chinese paragraphs (with their article titles), 3,219 questions.

    The relevant document of a question is the paragraph it was asked about.
    Quick: ``n_paragraphs`` random paragraphs and every question on them.
    """
    raw = json.loads((data_dir / "chinese" / "cmrc2018_dev" / "cmrc2018_dev.squad-style.json").read_text("utf-8"))
    docs: list[Doc] = []
    questions: list[tuple[str, str, str]] = []
    for article in raw["data"]:
        for i, para in enumerate(article["paragraphs"]):
            doc_id = para.get("id") or f"{article['id']}#{i}"
            docs.append((doc_id, article.get("title") or "", para["context"]))
            questions.extend((qa["id"], qa["question"], doc_id) for qa in para["qas"])
    note = "full"
    if quick:
        rng = random.Random(SEED)
        keep = {d[0] for d in rng.sample(docs, min(n_paragraphs, len(docs)))}
        total_docs, total_q = len(docs), len(questions)
        docs = [d for d in docs if d[0] in keep]
        questions = [q for q in questions if q[2] in keep]
        note = f"quick: {len(docs)}/{total_docs} paragraphs, {len(questions)}/{total_q} questions"
    return Dataset(
        "cmrc2018",
        docs,
        [(qid, q) for qid, q, _ in questions],
        {qid: {doc: 1} for qid, _, doc in questions},
        {"chunk_tokens": 200, "chunk_overlap": 30},
        note,
    )


def hotpotqa(data_dir: Path = DATA_DIR, *, quick: bool = False, n_questions: int = 40) -> Dataset:
    """HotpotQA dev, IRCoT's 500-question sample: the union of all questions' paragraphs is the corpus.

    Titles are unique, so a paragraph's id is its title; the two ``is_supporting`` paragraphs
    are a question's relevant documents. Quick: ``n_questions`` questions and their own paragraphs.
    """
    rows = _jsonl(data_dir / "hotpotqa_dev_ircot500" / "dev_subsampled.jsonl")
    note = "full"
    if quick:
        rng = random.Random(SEED)
        rows = rng.sample(rows, min(n_questions, len(rows)))
    docs: dict[str, Doc] = {}
    queries: list[tuple[str, str]] = []
    qrels: dict[str, dict[str, int]] = {}
    for row in rows:
        for ctx in row["contexts"]:
            docs.setdefault(ctx["title"], (ctx["title"], ctx["title"], ctx["paragraph_text"]))
        qrels[row["question_id"]] = {c["title"]: 1 for c in row["contexts"] if c["is_supporting"]}
        queries.append((row["question_id"], row["question_text"]))
    if quick:
        note = f"quick: {len(queries)}/500 questions, {len(docs)}/4858 paragraphs"
    return Dataset("hotpotqa", list(docs.values()), queries, qrels, {"chunk_tokens": 200, "chunk_overlap": 30}, note)


LOADERS = {"scifact": scifact, "cmrc2018": cmrc2018, "hotpotqa": hotpotqa}
FILES = {
    "scifact": ("beir_scifact/corpus.jsonl", "beir_scifact/queries.jsonl", "beir_scifact/qrels/test.tsv"),
    "cmrc2018": ("chinese/cmrc2018_dev/cmrc2018_dev.squad-style.json",),
    "hotpotqa": ("hotpotqa_dev_ircot500/dev_subsampled.jsonl",),
}
"""The files each set is read from, relative to the data folder."""


def missing_files(names: list[str], data_dir: Path = DATA_DIR) -> list[Path]:
    """The files the sets ``names`` need that ``data_dir`` lacks (checked before any work starts)."""
    return [data_dir / f for name in names for f in FILES[name] if not (data_dir / f).is_file()]


def load(name: str, data_dir: Path = DATA_DIR, *, quick: bool = False) -> Dataset:
    """The dataset called ``name`` (``scifact``, ``cmrc2018``, ``hotpotqa``)."""
    return LOADERS[name](data_dir, quick=quick)
