"""An answer evaluation end to end with the scripted model: figures, failures, resume, report."""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from reasonloop.errors import LLMServerError, PluginNotFound
from reasonloop.eval.datasets import load_qa_set
from reasonloop.eval.qa import evaluate_qa, open_eval_kb
from reasonloop.eval.report import write_html
from reasonloop.llm.scripted import ScriptedProvider

# Replies per question: q1 right with a citation, q2 wrong, q3 (Chinese) partly right.
REPLIES = {
    "When was the Eiffel Tower completed?": "It was completed in 1889 [1].",
    "In which country is Lake Baikal?": "Mongolia",
    "长城始建于什么时期？": "战国时期 [1]",
}


def replies(messages, tools):
    question = messages[-1].content.rsplit("Question:", 1)[-1].rsplit("问题：", 1)[-1].strip()
    for q, reply in REPLIES.items():
        if q in question:
            return reply
    raise AssertionError(f"unexpected prompt {question!r}")


async def _run(tmp_path, qa, llm, embedder, **kwargs):
    kb = await open_eval_kb(qa, tmp_path / "work", embedder=embedder)
    try:
        return await evaluate_qa(qa, ["qa"], llm=llm, retriever=kb.retriever(), folder=tmp_path / "out", **kwargs)
    finally:
        await kb.close()


async def test_scores_and_cost_are_exact(tmp_path, qa_files, embedder) -> None:
    questions, corpus = qa_files
    qa = load_qa_set(questions, corpus=corpus)
    report = await _run(tmp_path, qa, ScriptedProvider(replies=replies), embedder)
    (score,) = report.scores
    assert (score.questions, score.failed) == (3, 0)
    rows = {r["id"]: r for r in report.rows["qa"]}
    # q1: "it was completed in 1889" vs "1889": P 1/5, R 1 -> F1 1/3; EM 0
    assert rows["q1"]["f1"] == pytest.approx(1 / 3)
    assert rows["q2"]["f1"] == 0.0
    # q3, by character: "战国时期" (4) vs "春秋战国时期" (6): common 4 -> P 1, R 2/3, F1 0.8
    assert rows["q3"]["f1"] == pytest.approx(0.8)
    assert score.f1 == pytest.approx(100 * (1 / 3 + 0.8) / 3)
    assert score.em == 0.0
    assert score.evidence_recall == pytest.approx(1.0)  # every gold document was retrieved
    # the passage [1] cited by q1 holds "1889"; the one cited by q3 holds "春秋战国时期"
    assert rows["q1"]["citation_precision"] == 1.0
    assert rows["q3"]["citation_precision"] == 1.0
    assert rows["q2"]["citation_precision"] is None  # no citation
    assert score.llm_calls == 1.0 and score.searches == 1.0 and score.tool_calls == 0.0  # qa searches itself


async def test_a_failing_model_is_recorded_and_the_rest_goes_on(tmp_path, qa_files, embedder) -> None:
    questions, corpus = qa_files
    qa = load_qa_set(questions, corpus=corpus)

    def flaky(messages, tools):
        if "In which country" in messages[-1].content.rsplit("Question:", 1)[-1]:
            raise LLMServerError("backend down")
        return replies(messages, tools)

    report = await _run(tmp_path, qa, ScriptedProvider(replies=flaky), embedder)
    (score,) = report.scores
    assert (score.questions, score.failed) == (3, 1)
    assert "q2" in score.errors[0] and "llm.server_error" in score.errors[0]
    assert score.f1 == pytest.approx(100 * (1 / 3 + 0.8) / 2)


class Killed(BaseException):
    pass


async def test_resume_after_a_killed_run_recomputes_nothing_finished(tmp_path, qa_files, embedder) -> None:
    questions, corpus = qa_files
    qa = load_qa_set(questions, corpus=corpus)
    first = ScriptedProvider(replies=replies)

    def kill_after_first(row, resumed):
        raise Killed

    with pytest.raises(Killed):
        await _run(tmp_path, qa, first, embedder, on_result=kill_after_first)
    results = tmp_path / "out" / "results.jsonl"
    assert len(results.read_text().splitlines()) == 1
    with results.open("a") as fh:
        fh.write('{"strategy": "qa", "id": "q2", "que')  # a line cut short by the kill
    second = ScriptedProvider(replies=replies)
    seen = []
    report = await _run(
        tmp_path, qa, second, embedder, on_result=lambda row, resumed: seen.append((row["id"], resumed))
    )
    assert len(first.prompts) == 1
    assert len(second.prompts) == 2  # only q2 and q3 ran again
    assert sorted(seen) == [("q1", True), ("q2", False), ("q3", False)]
    assert report.scores[0].questions == 3 and report.scores[0].failed == 0
    # a third run finds everything done
    third = ScriptedProvider(replies=replies)
    await _run(tmp_path, qa, third, embedder)
    assert len(third.prompts) == 0


async def test_another_evaluation_in_the_same_folder_is_refused(tmp_path, qa_files, embedder) -> None:
    from reasonloop.errors import ConfigError

    questions, corpus = qa_files
    qa = load_qa_set(questions, corpus=corpus)
    await _run(tmp_path, qa, ScriptedProvider(replies=replies), embedder)
    with pytest.raises(ConfigError, match="another evaluation"):
        await _run(tmp_path, qa, ScriptedProvider(replies=replies), embedder, manifest={"temperature": 0.5})


async def test_unknown_strategy_fails_before_anything_runs(tmp_path, qa_files, embedder) -> None:
    questions, corpus = qa_files
    qa = load_qa_set(questions, corpus=corpus)
    llm = ScriptedProvider(replies=replies)
    with pytest.raises(PluginNotFound, match="nope"):
        await evaluate_qa(qa, ["qa", "nope"], llm=llm, retriever=None, folder=tmp_path / "out")
    assert not (tmp_path / "out").exists()


class _Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict[str, str]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs))


async def test_html_report_embeds_its_plots(tmp_path, qa_files, embedder) -> None:
    questions, corpus = qa_files
    qa = load_qa_set(questions, corpus=corpus)
    report = await _run(tmp_path, qa, ScriptedProvider(replies=replies), embedder)
    page = write_html(tmp_path / "report.html", "Answers", kind="qa", report=report).read_text(encoding="utf-8")
    parser = _Images()
    parser.feed(page)
    assert [img["alt"] for img in parser.images] == ["F1 against tokens", "Latency distribution"]
    for img in parser.images:
        prefix = "data:image/png;base64,"
        assert img["src"].startswith(prefix)
        assert base64.b64decode(img["src"][len(prefix) :])[:8] == b"\x89PNG\r\n\x1a\n"
    assert "http://" not in page and "https://" not in page  # opens offline
    assert "<td>qa</td>" in page


def test_rows_are_json_lines(tmp_path) -> None:
    # the results file is plain JSONL a script can read
    path = Path(tmp_path / "r.jsonl")
    path.write_text(json.dumps({"strategy": "qa", "id": "x"}) + "\n")
    assert json.loads(path.read_text())["id"] == "x"


async def test_model_judged_scores_with_a_scripted_judge(tmp_path, qa_files, embedder) -> None:
    from reasonloop.eval.judge import Judge

    questions, corpus = qa_files
    qa = load_qa_set(questions, corpus=corpus)
    # q1 (cites): faithful YES, relevant YES; q2 (no citation): relevant NO; q3 (cites): NO, then "Yes."
    judge_llm = ScriptedProvider(replies=["YES", "YES", "NO", "NO", "Yes."])
    report = await _run(tmp_path, qa, ScriptedProvider(replies=replies), embedder, judge=Judge(judge_llm))
    (score,) = report.scores
    assert score.faithfulness == pytest.approx(0.5)
    assert score.relevance == pytest.approx(2 / 3)
    rows = {r["id"]: r for r in report.rows["qa"]}
    assert rows["q2"]["judge"] == {"faithfulness": None, "relevance": 0.0}
    assert "Sources:" in judge_llm.prompts[0][0].content and "1889" in judge_llm.prompts[0][0].content


# Answers of a strategy that reports whether it abstained, per question: (text, abstained).
CANNED = {
    "Does the Halo float?": ("No, it must not be submerged [1].", False),  # yes_no: correct
    "Is the Halo Max rated IP67?": ("The passages do not say.", True),  # yes_no: abstained
    "Does the Aria 2 support LDAC?": ("Yes.", False),  # yes_no: wrong
    "Aria 2 的价格是多少？": ("1,799 元 [1]", False),  # span: correct
    "What does the Halo cost?": ("$199", False),  # span: wrong
    "How much is the Aria 3?": ("The documents do not mention an Aria 3.", True),  # absent: correct
    "Who is the CTO?": ("Margit Halloran.", False),  # absent: wrong
}
CANNED_SET = [
    {"id": "y1", "group": "yes_no", "question": "Does the Halo float?", "answers": ["no"]},
    {"id": "y2", "group": "yes_no", "question": "Is the Halo Max rated IP67?", "answers": ["yes"]},
    {"id": "y3", "group": "yes_no", "question": "Does the Aria 2 support LDAC?", "answers": ["no"]},
    {"id": "s1", "group": "span", "question": "Aria 2 的价格是多少？", "answers": ["1799元"], "gold_ids": ["price"]},
    {"id": "s2", "group": "span", "question": "What does the Halo cost?", "answers": ["$179"]},
    {"id": "a1", "group": "absent", "question": "How much is the Aria 3?", "answerable": False},
    {"id": "a2", "group": "absent", "question": "Who is the CTO?", "answerable": False},
]


def _canned_registry():
    from reasonloop.events import Answer
    from reasonloop.reasoning.base import Reasoning
    from reasonloop.registry import PluginInfo, Registry

    class Canned(Reasoning):
        info = PluginInfo(id="canned", name="Canned", description="Answers from a table")

        async def stream(self, question):
            text, abstained = CANNED[question.strip()]
            yield Answer(text=text, abstained=abstained)

    registry = Registry(use_entry_points=False)
    registry.register("reasoning", "canned", Canned)
    return registry


async def test_outcomes_are_counted_overall_and_per_group(tmp_path, embedder) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps({"id": "price", "title": "价格", "text": "Aria 2 售价 1,799 元。"}, ensure_ascii=False)
    )
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in CANNED_SET), encoding="utf-8")
    qa = load_qa_set(questions, corpus=corpus)
    kb = await open_eval_kb(qa, tmp_path / "work", embedder=embedder)
    try:
        report = await evaluate_qa(
            qa,
            ["canned"],
            llm=ScriptedProvider(replies=[]),
            retriever=kb.retriever(),
            folder=tmp_path / "out",
            registry=_canned_registry(),
        )
    finally:
        await kb.close()
    rows = {r["id"]: r for r in report.rows["canned"]}
    assert {i: r["outcome"] for i, r in rows.items()} == {
        "y1": "correct",
        "y2": "abstained",
        "y3": "wrong",
        "s1": "correct",
        "s2": "wrong",
        "a1": "correct",
        "a2": "wrong",
    }
    assert rows["y1"]["decision"] == "no" and rows["y2"]["decision"] is None and "decision" not in rows["s1"]
    assert rows["a1"]["abstained"] is True and rows["a1"]["answerable"] is False and rows["a1"]["group"] == "absent"
    assert rows["a1"]["em"] is None and rows["a1"]["f1"] is None  # no accepted answer to compare with
    (score,) = report.scores
    assert (score.correct, score.abstained, score.wrong) == (3, 1, 3)
    assert score.wrong_share == pytest.approx(3 / 6)
    groups = {name: (g.questions, g.correct, g.abstained, g.wrong) for name, g in score.groups.items()}
    assert groups == {"yes_no": (3, 1, 1, 1), "span": (2, 1, 0, 1), "absent": (2, 1, 0, 1)}
    assert score.groups["yes_no"].wrong_share == pytest.approx(0.5)
    assert score.groups["absent"].em is None
    # EM/F1 average over the five questions that have answers: y1 ("no" vs "No, it must ..."), ...
    assert score.f1 == pytest.approx(100 * sum(rows[i]["f1"] for i in ("y1", "y2", "y3", "s1", "s2")) / 5)
    summary = report.to_dict()["strategies"][0]
    assert summary["groups"]["absent"] == {
        "questions": 2,
        "failed": 0,
        "correct": 1,
        "abstained": 0,
        "wrong": 1,
        "wrong_share": 0.5,
        "em": None,
        "f1": None,
        "intervals": {},  # no accepted answer: no EM or F1 to bound
    }
    assert summary["groups"]["span"]["intervals"]["f1"]["n"] == 2
    page = write_html(tmp_path / "r.html", "Answers", kind="qa", report=report).read_text(encoding="utf-8")
    assert "Per group of questions" in page and "<td>absent</td>" in page and "<th>wrong/answered</th>" in page


def test_resumed_rows_are_judged_by_the_current_rules() -> None:
    from reasonloop.eval.qa import summarize

    old = {"answers": ["yes"], "prediction": "Yes [1]", "em": 1.0, "f1": 1.0, "seconds": 0.1}  # no outcome kept
    old["usage"] = dict.fromkeys(("llm_calls", "prompt_tokens", "completion_tokens", "tool_calls"), 1)
    judged = {**old, "answers": ["60 days"], "prediction": "30 days", "outcome": "correct"}  # by an older rule
    score = summarize("qa", [old, {**old, "prediction": "It is."}, judged], [])
    assert (score.correct, score.abstained, score.wrong) == (1, 0, 2)
    assert score.groups == {}  # a set without groups has no per-group figures
