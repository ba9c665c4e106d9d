"""The reference schedulers of benchmarks/rewoo_schedule.py: levels, the barrier, the critical path."""

from __future__ import annotations

import asyncio

import pytest

from reasonloop.reasoning.formats.rewoo_plan import PlanStep, execute, parse_plan
from tests.benchmarks.loading import load_benchmark

bench = load_benchmark("rewoo_schedule")

# E1 -> E2 (slow) -> E4 ; E1 -> E3 (fast) -> E5 ; E4 + E5 -> E6
LOPSIDED = """#E1 = sleep[20]
#E2 = sleep[70 #E1]
#E3 = sleep[10 #E1]
#E4 = sleep[10 #E2]
#E5 = sleep[10 #E3]
#E6 = sleep[20 #E4 #E5]"""


def ids(tiers: list[list[PlanStep]]) -> list[list[str]]:
    return [[s.id for s in tier] for tier in tiers]


def test_levels_follow_the_deepest_dependency() -> None:
    plan = parse_plan("#E1 = t[a]\n#E2 = t[#E1]\n#E3 = t[b]\n#E4 = t[#E3 #E2]\n#E5 = t[#E1]", tools={"t"})
    assert ids(bench.levels(plan)) == [["E1", "E3"], ["E2", "E5"], ["E4"]]


def test_levels_do_not_depend_on_the_order_steps_are_written() -> None:
    plan = parse_plan("#E3 = t[#E2]\n#E2 = t[#E1]\n#E1 = t[x]", tools={"t"}, allow_forward_refs=True)
    assert ids(bench.levels(plan)) == [["E1"], ["E2"], ["E3"]]


def test_levels_reject_a_cycle_and_a_missing_step() -> None:
    cycle = parse_plan("#E1 = t[#E3]\n#E2 = t[#E1]\n#E3 = t[#E2]", tools={"t"}, allow_forward_refs=True)
    with pytest.raises(ValueError, match="cycle"):
        bench.levels(cycle)
    missing = parse_plan("#E1 = t[#E7]", tools={"t"})
    with pytest.raises(ValueError, match="#E7"):
        bench.levels(missing)


def test_critical_path_is_the_heaviest_chain() -> None:
    plan = parse_plan(LOPSIDED, tools={"sleep"})
    assert bench.critical_path_s(plan) == pytest.approx(0.120)  # 20 + 70 + 10 + 20
    shape = bench.lopsided_diamond(20, 70, 3)
    assert bench.critical_path_s(parse_plan(shape.plan_text(), tools={"sleep"})) == pytest.approx(0.110)


def test_every_shape_parses_into_the_dag_it_describes() -> None:
    for shape in bench.shapes(quick=False):
        plan = parse_plan(shape.plan_text(), tools={"sleep"})
        assert [s.problem for s in plan.steps] == [None] * len(shape.deps), shape.name
        assert [s.deps for s in plan.steps] == [tuple(f"E{d + 1}" for d in deps) for deps in shape.deps]
        assert [bench.latency_s(s) * 1000 for s in plan.steps] == pytest.approx(list(shape.latency_ms))


class Recorder:
    """A tool whose slow step (E2) waits for a gate, recording starts and ends in order."""

    def __init__(self, opens_gate: str) -> None:
        self.log: list[str] = []
        self.inputs: dict[str, str] = {}
        self.gate = asyncio.Event()
        self.opens_gate = opens_gate

    async def __call__(self, step: PlanStep, text: str) -> str:
        self.log.append(f"start {step.id}")
        self.inputs[step.id] = text
        if step.id == self.opens_gate:
            self.gate.set()
        if step.id == "E2":
            await asyncio.wait_for(self.gate.wait(), timeout=5)
        await asyncio.sleep(0)
        self.log.append(f"end {step.id}")
        return f"out{step.id[1:]}"


async def test_barrier_starts_a_level_only_after_the_whole_previous_level() -> None:
    record = Recorder(opens_gate="E3")  # E2 may finish as soon as its sibling E3 ran
    outputs = await bench.run_barrier(parse_plan(LOPSIDED, tools={"sleep"}), record)
    assert outputs == {f"E{n}": f"out{n}" for n in range(1, 7)}
    assert record.log.index("end E2") < record.log.index("start E5")  # E5 waited for E2, not only for E3
    assert record.log.index("end E5") < record.log.index("start E6")
    assert record.inputs["E6"] == "20 out4 out5"


@pytest.mark.parametrize("scheduler", ["ours", "dataflow"])
async def test_without_a_barrier_a_step_starts_while_another_branch_still_runs(scheduler: str) -> None:
    record = Recorder(opens_gate="E5")  # E2 can only finish once E5 has started
    plan = parse_plan(LOPSIDED, tools={"sleep"})
    if scheduler == "ours":
        results = [u async for u in execute(plan, record) if not hasattr(u, "input")]
        assert all(r.ok for r in results) and len(results) == 6
    else:
        assert len(await bench.run_dataflow(plan, record)) == 6
    assert record.log.index("start E5") < record.log.index("end E2")
    assert record.inputs["E6"] == "20 out4 out5"
