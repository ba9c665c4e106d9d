"""Hop routing: the bundled set's hop labels, scores by hand, a run with a scripted model, the CLI."""

from __future__ import annotations

import json

import pytest

from reasonloop.errors import EvalDataError
from reasonloop.eval.datasets import RoutingItem, load_routing_set
from reasonloop.eval.route_hops import evaluate_hops, hop_routing_tables, score_hops
from reasonloop.eval.routing import bundled_set_path
from reasonloop.llm.scripted import ScriptedProvider


def test_the_bundled_set_has_hop_labels_in_both_languages_and_a_held_out_part() -> None:
    items = load_routing_set(bundled_set_path())
    assert all(i.hops for i in items)
    for split in ("dev", "heldout"):
        part = [i for i in items if i.split == split]
        assert {(i.hops, i.language) for i in part} == {
            (h, lang) for h in ("none", "single", "multi_hop", "research") for lang in ("en", "zh")
        }


def test_a_bad_hop_label_is_refused_with_its_line(tmp_path) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps({"question": "q", "tools": [], "hops": "two"}) + "\n", encoding="utf-8")
    with pytest.raises(EvalDataError, match="hops must be one of none, single, multi_hop, research"):
        load_routing_set(path)


def test_scores_by_hand() -> None:
    rows = [
        {
            "id": "1",
            "question": "a",
            "split": "dev",
            "expected": "single",
            "router": "single",
            "rule": "single",
            "decided_by": "model",
        },
        {
            "id": "2",
            "question": "b",
            "split": "dev",
            "expected": "multi_hop",
            "router": "multi_hop",
            "rule": "single",
            "decided_by": "model",
        },
        {
            "id": "3",
            "question": "c",
            "split": "heldout",
            "expected": "none",
            "router": "single",
            "rule": "single",
            "decided_by": "rule",
        },
        {
            "id": "4",
            "question": "d",
            "split": "heldout",
            "expected": "research",
            "router": "",
            "rule": "research",
            "decided_by": "",
            "error": {"code": "x"},
        },
    ]
    report = score_hops(rows)
    assert (report.questions, report.failed, report.model_decided) == (4, 1, 2)
    assert report.accuracy["router"] == {"dev": 1.0, "heldout": 0.0, "all": pytest.approx(2 / 3)}
    assert report.accuracy["rule"] == {"dev": 0.5, "heldout": 0.0, "all": pytest.approx(1 / 3)}
    assert report.confusion["rule"] == {"multi_hop": {"single": 1}, "none": {"single": 1}, "single": {"single": 1}}
    assert report.counts == {"dev": 2, "heldout": 1}
    text = hop_routing_tables(report)
    line = next(x for x in text.splitlines() if x.startswith("| model, rule when it gives no decision"))
    assert [c.strip() for c in line.split("|")[2:5]] == ["1.000", "0.000", "0.667"]


async def test_a_run_with_a_model_that_answers_some_questions_badly(tmp_path) -> None:
    def reply(messages, tools):
        prompt = messages[-1].content
        if "Oslo" in prompt:
            return '{"route": "multi_hop", "reason": "two offices"}'
        if "deadline" in prompt:
            return "I would rather not say."  # a refusal: the rule decides
        return '{"route": "research"'  # broken JSON: the rule decides

    items = [
        RoutingItem("a", "Which office is older, Oslo or Madrid?", (), hops="multi_hop", split="dev"),
        RoutingItem("b", "What is the deadline for expense claims?", (), hops="single", split="dev"),
        RoutingItem("c", "Hello!", (), hops="none", split="heldout"),
        RoutingItem("d", "Unlabelled question", ()),  # no hops label: not routed
    ]
    llm = ScriptedProvider(replies=reply)
    report = await evaluate_hops(items, llm=llm, folder=tmp_path / "out", manifest={"model": "scripted"})
    assert (report.questions, report.model_decided) == (3, 1)
    assert report.accuracy["router"]["all"] == 1.0
    by_id = {r["id"]: r for r in report.rows}
    assert by_id["b"]["decided_by"] == "rule" and "held no route" in by_id["b"]["reason"]
    assert len(llm.prompts) == 3
    again = await evaluate_hops(items, llm=llm, folder=tmp_path / "out", manifest={"model": "scripted"})
    assert len(llm.prompts) == 3 and again.accuracy == report.accuracy  # resumed: nothing asked again


def test_the_cli_reports_the_router_and_the_rule_on_the_bundled_set(tmp_path, capsys) -> None:
    from tests.cli_run import run_cli

    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(['{"route": "single", "reason": "one search"}'] * 200), encoding="utf-8")
    argv = ["eval", "routing", "--hops", "--llm", f"scripted:{replies}", "--work", str(tmp_path / "w"), "--json"]
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0
    report = json.loads(out)
    items = load_routing_set(bundled_set_path())
    assert report["questions"] == len(items) and report["model_decided"] == len(items)
    singles = sum(i.hops == "single" for i in items)
    assert report["accuracy"]["router"]["all"] == pytest.approx(singles / len(items))
    assert set(report["confusion"]["router"]) == {"none", "single", "multi_hop", "research"}
    assert set(report["accuracy"]["rule"]) == {"dev", "heldout", "all"}
    code, _, err = run_cli(capsys, "eval", "routing", "--hops", "--html", str(tmp_path / "r.html"))
    assert code != 0 and "--html is not available with --hops" in err
