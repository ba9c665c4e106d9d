"""The ReWOO plan parser and scheduler on their own, with synthetic plans."""

from __future__ import annotations

import asyncio

import pytest

from reasonloop.reasoning.formats.rewoo_plan import (
    Plan,
    PlanStep,
    StepFailed,
    StepResult,
    StepStarted,
    execute,
    parse_plan,
    reference_text,
    substitute,
)
from reasonloop.tokens import count_tokens


async def run_plan(plan: Plan, run_step, **kwargs) -> tuple[list[str], dict[str, StepResult]]:
    log: list[str] = []
    results: dict[str, StepResult] = {}
    async with asyncio.timeout(5):  # a hang is a failure, not a stuck suite
        async for update in execute(plan, run_step, **kwargs):
            if isinstance(update, StepStarted):
                log.append(f"start {update.step.id}")
            else:
                log.append(f"end {update.step.id}")
                assert update.step.id not in results, "one result per step"
                results[update.step.id] = update
    return log, results


def test_parse_twelve_plus_steps_and_every_form() -> None:
    lines = []
    for n in range(1, 14):
        lines += [f"Plan: step {n}", f"#E{n} = search[item {n}" + (f" after #E{n - 1}]" if n > 1 else "]")]
    lines += ['#E14 = search("quoted")', "**#E15** = calc: 2+2", "noise line", "#E16 =  search [ spaced ]"]
    plan = parse_plan("\n".join(lines), tools={"search", "calc"})
    assert [s.id for s in plan.steps] == [f"E{n}" for n in range(1, 17)]
    assert plan.steps[10].deps == ("E10",) and plan.steps[11].deps == ("E11",)  # #E1 is not #E10 or #E11
    assert plan.steps[0].reason == "step 1" and plan.steps[0].input == "item 1"
    assert plan.steps[13].input == "quoted" and plan.steps[14].input == "2+2"
    assert plan.steps[15].input == "spaced"
    assert all(s.problem is None for s in plan.steps)


def test_steps_on_the_same_line_as_their_plan() -> None:
    text = (
        "Plan: Find out which company makes the X200. #E1 = docsearch[maker of the X200]\n"
        "Plan: Find where that company has its head office. #E2 = docsearch[head office of #E1]"
    )
    plan = parse_plan(text, tools={"docsearch"})
    assert [(s.id, s.tool, s.input, s.deps) for s in plan.steps] == [
        ("E1", "docsearch", "maker of the X200", ()),
        ("E2", "docsearch", "head office of #E1", ("E1",)),
    ]
    assert plan.steps[1].reason == "Find where that company has its head office."
    assert all(s.problem is None for s in plan.steps)


def test_numbered_plans_bold_labels_and_two_steps_on_one_line() -> None:
    text = (
        "1. Plan: Look up when the bridge opened. #E1 = Search[opening year of the Harbour Bridge]\n"
        "2. **Plan 2:** Compare with the tunnel. #E2 = Search[opening year of the tunnel, not #E1 [sic]]\n"
        "Plan: first check. #E3 = Search[a] Plan: second check. #E4 = Search(b)"
    )
    plan = parse_plan(text, tools={"search"})  # the tool written in another case is that tool
    assert [(s.id, s.tool, s.input, s.reason) for s in plan.steps] == [
        ("E1", "search", "opening year of the Harbour Bridge", "Look up when the bridge opened."),
        ("E2", "search", "opening year of the tunnel, not #E1 [sic]", "Compare with the tunnel."),
        ("E3", "search", "a", "first check."),
        ("E4", "search", "b", "second check."),
    ]
    assert plan.steps[1].deps == ("E1",) and all(s.problem is None for s in plan.steps)


def test_a_reference_in_prose_is_no_step_and_prose_alone_is_no_plan() -> None:
    text = "Plan: Given #E1 = the maker, find its office.\n#E1 = docsearch[maker]"
    assert [(s.id, s.input) for s in parse_plan(text).steps] == [("E1", "maker")]
    assert parse_plan("The X200 is made by Acme; no search is needed.").steps == []
    assert parse_plan("").steps == []


def test_reference_text_keeps_a_short_answer_whole_and_bounds_a_long_one() -> None:
    assert reference_text("Acme Corporation", 40) == "Acme Corporation"
    evidence = (
        "[1] Makers (makers.md, p. 2)\nThe X200 is made by Acme Corporation. Acme was founded in 1950 "
        + "and makes many other devices. " * 30
        + "\n\n[2] Other (other.md)\nUnrelated text."
    )
    ref = reference_text(evidence, 40)
    assert ref.startswith("The X200 is made by Acme Corporation.") and ref.endswith(".")
    assert count_tokens(ref) <= 40 and "[1]" not in ref and "\n" not in ref
    unbroken = "word " * 100  # no sentence end within the bound: the first tokens
    assert count_tokens(reference_text(unbroken, 20)) <= 20


def test_parse_marks_unknown_tools_missing_self_and_forward_references() -> None:
    plan = parse_plan(
        "#E1 = search[a]\n#E2 = fly[b]\n#E3 = search[#E9]\n#E4 = search[#E4]\n#E5 = search[#E6]\n#E6 = search[x]\n"
        "#E1 = search[dup]",
        tools={"search"},
    )
    problems = {s.id: s.problem for s in plan.steps}
    assert problems["E1"] is None and plan.steps[0].input == "a"
    assert "unknown tool 'fly'" in problems["E2"]
    assert "#E9, which the plan does not define" in problems["E3"]
    assert "its own result" in problems["E4"]
    assert "comes later" in problems["E5"]
    assert any("defined twice" in n for n in plan.notes)
    assert parse_plan("#E1 = search[#E2]\n#E2 = search[x]", allow_forward_refs=True).steps[0].problem is None


def test_substitute_replaces_exact_references() -> None:
    assert substitute("#E1 and #E10 and #E2", {"E1": "one", "E10": "ten"}) == "one and ten and #E2"


async def test_diamond_runs_each_step_once_after_its_inputs() -> None:
    plan = parse_plan("#E1 = t[root]\n#E2 = t[left #E1]\n#E3 = t[right #E1]\n#E4 = t[join #E2 #E3]")
    seen: dict[str, str] = {}

    async def run_step(step: PlanStep, text: str) -> str:
        seen[step.id] = text
        await asyncio.sleep(0)
        return step.id.lower()

    log, results = await run_plan(plan, run_step)
    assert all(r.ok for r in results.values())
    assert seen["E4"] == "join e2 e3" and seen["E2"] == "left e1"
    assert log.index("end E1") < log.index("start E2") and log.index("end E3") < log.index("start E4")


async def test_a_step_starts_as_soon_as_its_own_dependencies_are_done() -> None:
    # E1 can only finish once E3 has started, and E3 needs only E2. A level-by-level
    # scheduler would wait for E1 before starting E3 and never finish.
    plan = parse_plan("#E1 = t[slow]\n#E2 = t[fast]\n#E3 = t[after #E2]")
    e3_started = asyncio.Event()

    async def run_step(step: PlanStep, text: str) -> str:
        if step.id == "E1":
            await e3_started.wait()
        if step.id == "E3":
            e3_started.set()
        return step.id

    log, results = await run_plan(plan, run_step)
    assert all(r.ok for r in results.values())
    assert log.index("start E3") < log.index("end E1")


async def test_independent_steps_overlap_up_to_the_limit() -> None:
    plan = parse_plan("\n".join(f"#E{n} = t[{n}]" for n in range(1, 13)))
    active = peak = 0

    async def run_step(step: PlanStep, text: str) -> str:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return text

    _, results = await run_plan(plan, run_step)
    assert len(results) == 12 and peak == 12
    active = peak = 0
    await run_plan(plan, run_step, max_concurrency=3)
    assert peak == 3


async def test_cycle_fails_its_steps_without_hanging() -> None:
    plan = parse_plan("#E1 = t[#E3]\n#E2 = t[#E1]\n#E3 = t[#E2]\n#E4 = t[free]\n#E5 = t[#E2]", allow_forward_refs=True)
    ran: list[str] = []

    async def run_step(step: PlanStep, text: str) -> str:
        ran.append(step.id)
        return "ok"

    _, results = await run_plan(plan, run_step)
    assert ran == ["E4"]
    assert {sid for sid, r in results.items() if not r.ok} == {"E1", "E2", "E3", "E5"}
    assert "cycle" in results["E1"].error


async def test_failure_and_missing_dependency_fail_dependents() -> None:
    plan = parse_plan("#E1 = t[bad]\n#E2 = t[#E1]\n#E3 = t[#E2]\n#E4 = t[#E7]\n#E5 = t[ok]", tools={"t"})

    async def run_step(step: PlanStep, text: str) -> str:
        if text == "bad":
            raise StepFailed("no such thing")
        return "fine"

    _, results = await run_plan(plan, run_step)
    assert results["E1"].error == "no such thing"
    assert "needs #E1, which failed" in results["E2"].error
    assert "needs #E2, which failed" in results["E3"].error
    assert "does not define" in results["E4"].error
    assert results["E5"].ok
    assert results["E1"].started is not None and results["E1"].ended is not None


async def test_unexpected_exceptions_fail_the_step() -> None:
    async def run_step(step: PlanStep, text: str) -> str:
        raise KeyError("k")

    _, results = await run_plan(parse_plan("#E1 = t[x]"), run_step)
    assert results["E1"].error == "KeyError: 'k'"


async def test_plan_timeout_fails_running_and_waiting_steps() -> None:
    plan = parse_plan("#E1 = t[x]\n#E2 = t[#E1]")

    async def run_step(step: PlanStep, text: str) -> str:
        await asyncio.sleep(30)
        return "late"

    _, results = await run_plan(plan, run_step, timeout_s=0.02)
    assert "time budget" in results["E1"].error and not results["E2"].ok


async def test_cancelling_the_consumer_cancels_running_steps() -> None:
    plan = parse_plan("#E1 = t[a]\n#E2 = t[b]")
    started = asyncio.Event()
    cancelled: list[str] = []

    async def run_step(step: PlanStep, text: str) -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(step.id)
            raise
        return "never"

    async def consume() -> None:
        async for _ in execute(plan, run_step):
            pass

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == ["E1", "E2"]
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_empty_plan_yields_nothing() -> None:
    async def run_step(step: PlanStep, text: str) -> str:
        raise AssertionError("no steps")

    assert await run_plan(Plan(), run_step) == ([], {})


def test_reference_text_given_the_query_keeps_the_sentence_that_answers_it() -> None:
    evidence = (
        "[1] Cables (cables.md)\nWho makes cables? A company founded in Oslo makes them. " * 3
        + "\n\n[2] Aria (aria.md)\nThe Aria 2 headphones are made by Northwind Audio. They ship in May."
    )
    ref = reference_text(evidence, 40, "Who makes the Aria 2 headphones?")
    assert ref == "The Aria 2 headphones are made by Northwind Audio."
    # no sentence shares a word with the query: the first sentences, as without one
    assert reference_text(evidence, 40, "zzz qqq") == reference_text(evidence, 40)
