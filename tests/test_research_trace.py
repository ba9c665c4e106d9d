"""The research tree in the CLI trace: the plan, each sub-agent's state as it changes, the judge."""

from __future__ import annotations

from reasonloop.agents import Agent
from reasonloop.cli.ask_cmd import TraceRenderer, consume
from tests.reasoning.research_helpers import PLAN, QUESTION, Corpus, ResearchModel


async def test_a_research_run_prints_its_tree_as_it_goes(capsys) -> None:
    gap = {"decision": "gap", "reason": "the population is missing", "gaps": [PLAN[2]]}
    agent = Agent("research", llm=ResearchModel(plan=PLAN[:2], judge=[gap, {"decision": "answer"}]), kb=Corpus())
    renderer = TraceRenderer()
    await consume(agent, QUESTION, [], renderer)
    out = capsys.readouterr().out
    lines = out.splitlines()
    order = [
        "Research plan:",
        f"  ├─ 1.1 {PLAN[0]}",
        f"  └─ 1.2 {PLAN[1]}",
        f"▶ 1.1 researching: {PLAN[0]}",
        "✓ 1.1 The Aria 2 headphones are made by Northwind Audio [1]. (1 citation)",
        "⚖ judge (round 1): gap — the population is missing",
        f"  missing: {PLAN[2]}",
        "Follow-up research (round 2):",
        f"  └─ 2.1 {PLAN[2]}",
        "✓ 2.1 Oslo has about 700000 inhabitants [3]. (1 citation)",
        "⚖ judge (round 2): answer",
        "Report: 1 section, 3 citations, 0 not established",
    ]
    at = 0
    for expected in order:  # each in this order, as the run went
        at = next(i for i in range(at, len(lines)) if lines[i].startswith(expected)) + 1
    # the tree drawn after the second decision: both rounds, their questions and decisions
    tree = out[out.index("⚖ judge (round 2)") :]
    for part in ("└── round 2", f"✓ 2.1 {PLAN[2]}", "⚖ gap", "⚖ answer", "│   ├── ✓ 1.1"):
        assert part in tree
    assert renderer.research is not None and renderer.research.status == {"1.1": "done", "1.2": "done", "2.1": "done"}
    assert renderer.answer is not None and len(renderer.answer.citations) == 3


async def test_a_cancelled_sub_agent_is_shown_cancelled(capsys) -> None:
    agent = Agent(
        "research",
        llm=ResearchModel(),
        kb=Corpus(slow_word="inhabitants", slow_s=30),
        settings={"timeout_s": 1.0, "report_share": 0.2},
    )
    await consume(agent, QUESTION, [], TraceRenderer())
    out = capsys.readouterr().out
    assert "⊘ 1.3 cancelled: the research time ran out" in out
    assert "Report: 1 section, 2 citations, 1 not established" in out
