"""Reading evaluation sets: every format, and one clear error naming file, line and field."""

from __future__ import annotations

import json

import pytest

from reasonloop.errors import EvalDataError
from reasonloop.eval.datasets import load_qa_set, load_retrieval_set, load_routing_set
from reasonloop.eval.routing import bundled_set_path


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows))
    return path


def test_beir_folder(tmp_path) -> None:
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    _write(root / "corpus.jsonl", [{"_id": "d1", "title": "T", "text": "x"}, {"_id": "d2", "text": "y"}])
    _write(root / "queries.jsonl", [{"_id": "q1", "text": "what"}, {"_id": "q2", "text": "unjudged"}])
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    ds = load_retrieval_set(root)
    assert [d.id for d in ds.docs] == ["d1", "d2"]
    assert ds.queries == [("q1", "what")]  # only judged queries are evaluated
    assert ds.qrels == {"q1": {"d2": 1}}


def test_missing_field_names_file_line_and_field(tmp_path) -> None:
    questions = _write(tmp_path / "q.jsonl", [{"question": "a?", "answers": ["x"]}, {"question": "b?"}])
    with pytest.raises(EvalDataError) as err:
        load_qa_set(questions)
    assert err.value.details == {"file": str(questions), "line": 2, "field": "answers"}
    assert f"{questions}:2" in err.value.message and "'answers'" in err.value.message


def test_a_gold_document_missing_from_a_corpus_jsonl_names_file_line_and_field(tmp_path) -> None:
    corpus = _write(tmp_path / "corpus.jsonl", [{"id": "d1", "text": "one"}])
    questions = _write(
        tmp_path / "q.jsonl",
        [
            {"question": "a?", "answers": ["x"], "gold_ids": ["d1"]},
            {"question": "b?", "answers": ["y"], "gold_ids": ["d1", "d9"]},
        ],
    )
    with pytest.raises(EvalDataError, match="'d9' is not in") as err:
        load_qa_set(questions, corpus=corpus)
    assert err.value.details == {"file": str(questions), "line": 2, "field": "gold_ids"}
    relevant = _write(
        tmp_path / "r.jsonl", [{"question": "a?", "relevant": ["d1"]}, {"question": "b?", "relevant": ["d9"]}]
    )
    with pytest.raises(EvalDataError, match="'d9' is not in") as err:
        load_retrieval_set(relevant, corpus=corpus)
    assert err.value.details == {"file": str(relevant), "line": 2, "field": "relevant"}


def test_wrong_format_is_one_clear_error(tmp_path) -> None:
    bad = _write(tmp_path / "bad.jsonl", ['{"question": "a?", "answers": ["x"]}', "not json"])
    with pytest.raises(EvalDataError, match=r"bad.jsonl:2: not valid JSON"):
        load_qa_set(bad)
    squad = tmp_path / "s.json"
    squad.write_text(json.dumps({"version": "1", "rows": []}))
    with pytest.raises(EvalDataError, match=r"not SQuAD format \(field 'data'\)"):
        load_qa_set(squad)
    with pytest.raises(EvalDataError, match="file not found"):
        load_qa_set(tmp_path / "nope.jsonl")


def test_question_jsonl_needs_its_corpus_and_known_ids(tmp_path) -> None:
    questions = _write(tmp_path / "q.jsonl", [{"question": "a?", "relevant": ["d9"]}])
    with pytest.raises(EvalDataError, match="needs its documents"):
        load_retrieval_set(questions)
    corpus = _write(tmp_path / "c.jsonl", [{"id": "d1", "text": "x"}])
    with pytest.raises(EvalDataError, match=r"q.jsonl:1: document 'd9' is not in"):
        load_retrieval_set(questions, corpus=corpus)


def test_hotpotqa_and_squad_formats(tmp_path) -> None:
    row = {
        "question_id": "h1",
        "question_text": "Who?",
        "answers_objects": [{"spans": ["Ann"]}],
        "contexts": [
            {"title": "A", "paragraph_text": "Ann wrote it.", "is_supporting": True},
            {"title": "B", "paragraph_text": "Noise.", "is_supporting": False},
        ],
    }
    qa = load_qa_set(_write(tmp_path / "h.jsonl", [row]))
    assert qa.items[0].answers == ("Ann",) and qa.items[0].gold_ids == ("A",)
    assert {d.id for d in qa.docs} == {"A", "B"}
    squad = tmp_path / "s.json"
    squad.write_text(
        json.dumps(
            {
                "data": [
                    {
                        "title": "T",
                        "paragraphs": [
                            {
                                "id": "p1",
                                "context": "北京是首都。",
                                "qas": [{"id": "z1", "question": "首都？", "answers": [{"text": "北京"}]}],
                            }
                        ],
                    }
                ]
            },
            ensure_ascii=False,
        )
    )
    qa = load_qa_set(squad)
    assert qa.items[0].gold_ids == ("p1",) and qa.docs[0].title == "T"


def test_bundled_routing_set_is_bilingual_and_covers_every_kind() -> None:
    items = load_routing_set(bundled_set_path())
    assert len(items) >= 60
    assert {i.language for i in items} == {"en", "zh"}
    kinds = {i.category for i in items}
    assert {"knowledge", "summary", "stats", "feedback", "greeting", "translation", "creative", "arithmetic"} <= kinds
    assert all(i.tools == () for i in items if i.category in ("greeting", "translation", "creative", "arithmetic"))
    assert len({i.id for i in items}) == len(items)


def _folder(tmp_path):
    root = tmp_path / "docs"
    (root / "zh").mkdir(parents=True)
    (root / "warranty.md").write_text("\n# Warranty\n\nTwo years for speakers.\n", encoding="utf-8")
    (root / "notes.txt").write_text("# not a title in a text file\nSupport replies in 2 days.\n", encoding="utf-8")
    (root / "zh" / "price.md").write_text("# 价格\n\nHalo Mini 售价 699 元。\n", encoding="utf-8")
    (root / "image.png").write_bytes(b"\x89PNG")  # not a document: skipped
    return root


def test_a_folder_of_documents_is_a_corpus(tmp_path) -> None:
    root = _folder(tmp_path)
    questions = _write(
        tmp_path / "q.jsonl",
        [
            {"id": "y1", "group": "yes_no", "question": "Two years?", "answers": ["yes"], "gold_ids": ["warranty.md"]},
            {"id": "a1", "group": "absent", "question": "Aria 3 price?", "answerable": False, "answers": []},
            {"id": "a2", "group": "absent", "question": "Dock Pro?", "answerable": False},
            {
                "id": "s1",
                "question": "价格？",
                "answers": ["699元"],
                "gold_ids": ["zh/price.md"],
                "evidence": "售价 699 元",
            },
        ],
    )
    qa = load_qa_set(questions, corpus=root)
    docs = {d.id: d for d in qa.docs}
    assert list(docs) == ["notes.txt", "warranty.md", "zh/price.md"]
    assert (docs["warranty.md"].title, docs["warranty.md"].text) == ("Warranty", "Two years for speakers.")
    assert docs["notes.txt"].title == "" and docs["notes.txt"].text.startswith("# not a title")
    assert docs["zh/price.md"].title == "价格"
    y1, a1, a2, s1 = qa.items
    assert (y1.group, y1.answerable, y1.answers) == ("yes_no", True, ("yes",))
    assert (a1.answerable, a1.answers, a2.answerable, a2.answers) == (False, (), False, ())
    assert (s1.group, s1.evidence) == ("", "售价 699 元")
    assert qa.select(own_docs=True).docs == [docs["warranty.md"], docs["zh/price.md"]]


@pytest.mark.parametrize(
    ("row", "message", "field"),
    [
        ({"id": "x", "answers": ["yes"]}, "missing", "question"),
        ({"id": "x", "question": "q?"}, "missing", "answers"),
        ({"id": "x", "question": "q?", "answer": 3.5}, "expected a list of strings", "answer"),
        ({"id": "x", "question": "q?", "answers": [" "]}, "is empty", "answers"),
        ({"id": "x", "question": "q?", "answerable": "no"}, "expected true or false", "answerable"),
        ({"id": "x", "question": "q?", "answerable": False, "answers": ["$1"]}, "has no answers", "answers"),
        ({"id": "x", "question": "q?", "answers": ["a"], "group": ["span"]}, "expected a string", "group"),
        ({"id": "x", "question": "q?", "answers": ["a"], "gold_ids": ["nope.md"]}, "'nope.md' is not in", "gold_ids"),
        ({"id": "x", "question": "q?", "answers": ["a"], "gold_ids": "nope.md"}, "'nope.md' is not in", "gold_ids"),
        ({"id": "q1", "question": "q?", "answers": ["a"]}, "id 'q1' repeats line 1", "id"),
    ],
)
def test_a_bad_question_line_names_its_line_and_field(tmp_path, row, message, field) -> None:
    root = _folder(tmp_path)
    questions = _write(tmp_path / "q.jsonl", [{"id": "q1", "question": "ok?", "answers": ["yes"]}, row])
    with pytest.raises(EvalDataError, match=message) as err:
        load_qa_set(questions, corpus=root)
    assert err.value.details == {"file": str(questions), "line": 2, "field": field}


def test_a_folder_corpus_without_documents_or_with_a_bad_file_is_refused(tmp_path) -> None:
    questions = _write(tmp_path / "q.jsonl", [{"question": "q?", "answers": ["a"]}])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(EvalDataError, match="no documents"):
        load_qa_set(questions, corpus=empty)
    root = _folder(tmp_path)
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(EvalDataError, match=r"latin1.txt: not UTF-8"):
        load_qa_set(questions, corpus=root)
    (root / "latin1.txt").write_text("# only a title\n", encoding="utf-8")
    (root / "latin1.md").write_text("# only a title\n", encoding="utf-8")
    with pytest.raises(EvalDataError, match=r"latin1.md: is empty"):
        load_qa_set(questions, corpus=root)


def test_a_musique_list_is_read_with_paragraphs_of_one_title_kept_apart(tmp_path) -> None:
    import json as _json

    from reasonloop.eval.datasets import load_qa_set

    rows = [
        {
            "id": "2hop_1",
            "question": "Who founded the town where the mill stands?",
            "answer": "Ada Brook",
            "answer_aliases": ["A. Brook"],
            "paragraphs": [
                {"idx": 0, "title": "Mill", "paragraph_text": "The mill stands in Ferrow.", "is_supporting": True},
                {
                    "idx": 1,
                    "title": "Ferrow",
                    "paragraph_text": "Ferrow was founded by Ada Brook.",
                    "is_supporting": True,
                },
                {"idx": 2, "title": "Mill", "paragraph_text": "Another mill, in Dunn.", "is_supporting": False},
            ],
        }
    ]
    path = tmp_path / "musique.json"
    path.write_text(_json.dumps(rows), encoding="utf-8")
    qa = load_qa_set(path)
    (item,) = qa.items
    assert item.answers == ("Ada Brook", "A. Brook") and item.gold_ids == ("Mill", "Ferrow")
    assert {d.id: d.text for d in qa.docs} == {
        "Mill": "The mill stands in Ferrow.",
        "Ferrow": "Ferrow was founded by Ada Brook.",
        "Mill (2)": "Another mill, in Dunn.",
    }
