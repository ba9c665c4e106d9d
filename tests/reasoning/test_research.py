"""The research strategy through a scripted model: plan, parallel sub-agents, each judge outcome,
budgets, the forced report at the time limit, malformed judge replies, the cited report."""

from __future__ import annotations

from reasonloop.agents import Agent
from reasonloop.events import Answer, Judged, Plan, Report, ResearchTask, ToolCall
from tests.reasoning.helpers import collect_events
from tests.reasoning.research_helpers import DOCS, PLAN, QUESTION, Corpus, ResearchModel


def page_text(document_id: str) -> str:
    return next(h.text for h in DOCS if h.document_id == document_id)


def tasks(events, status: str) -> list[ResearchTask]:
    return [e for e in events if isinstance(e, ResearchTask) and e.status == status]


async def run(llm: ResearchModel, corpus: Corpus | None = None, **settings) -> list:
    agent = Agent("research", llm=llm, kb=corpus or Corpus(), settings=settings or None)
    return await collect_events(agent, QUESTION)


async def test_a_question_needing_three_documents_ends_with_all_three_cited_to_their_sentences():
    llm = ResearchModel()
    events = await run(llm)
    [plan] = [e for e in events if isinstance(e, Plan)]
    assert [s.input for s in plan.steps] == PLAN and {s.tool for s in plan.steps} == {"research"}
    assert [t.step for t in tasks(events, "done")] == ["1.1", "1.2", "1.3"]
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.stop_reason == "final" and not answer.abstained
    assert {c.document_id for c in answer.citations} == {"d1", "d2", "d3"}
    for c in answer.citations:  # each citation quotes one sentence of its passage, not the passage
        assert c.quote in page_text(c.document_id) and c.quote != page_text(c.document_id)
    quotes = {c.document_id: c.quote for c in answer.citations}
    assert quotes["d2"] == "Northwind Audio was founded in Oslo in 1998."
    assert quotes["d3"] == "Oslo has about 700000 inhabitants."
    [report] = [e for e in events if isinstance(e, Report) and not e.partial]
    assert report.text == answer.text and report.sections[0].title == "Findings" and report.unestablished == []
    assert report.outcome == "answer"
    # the sub-agents' own events are nested under their task
    nested = [e for e in events if isinstance(e, ToolCall)]
    assert sorted(e.parent_call_id for e in nested) == ["research_1.1", "research_1.2", "research_1.3"]
    assert {e.depth for e in nested} == {1}
    assert sorted(e.call_id for e in nested) == ["1.1:react_1", "1.2:react_1", "1.3:react_1"]  # unique in the run
    assert llm.parts == {"plan": 1, "agent": 6, "judge": 1, "report": 1}
    assert answer.usage.llm_calls == 9 and answer.usage.tool_calls == 3


async def test_a_gap_is_researched_as_a_follow_up_round_on_the_named_missing_piece():
    gap = {"decision": "gap", "reason": "the population is missing", "gaps": [PLAN[2]]}
    llm = ResearchModel(plan=PLAN[:2], judge=[gap, {"decision": "answer"}])
    events = await run(llm)
    plans = [e for e in events if isinstance(e, Plan)]
    assert [p.attempt for p in plans] == [1, 2]
    assert [(s.id, s.input) for s in plans[1].steps] == [("2.1", PLAN[2])]
    judged = [e for e in events if isinstance(e, Judged)]
    assert [(j.round, j.outcome, j.gaps) for j in judged] == [(1, "gap", [PLAN[2]]), (2, "answer", [])]
    assert "[2.1] How many inhabitants" in llm.judge_prompts[1]  # the second judge sees the follow-up
    answer = events[-1]
    assert {c.document_id for c in answer.citations} == {"d1", "d2", "d3"} and answer.stop_reason == "final"


async def test_a_contradiction_is_researched_as_its_own_question():
    judge = [{"decision": "reconcile", "contradiction": "1998 or 2001 for the founding of Northwind Audio"}, "answer"]
    llm = ResearchModel(plan=PLAN[:2], judge=[judge[0], {"decision": "answer"}])
    events = await run(llm)
    plans = [e for e in events if isinstance(e, Plan)]
    assert plans[1].steps[0].input == (
        "Which is right, according to the documents: 1998 or 2001 for the founding of Northwind Audio"
    )
    assert [j.outcome for j in events if isinstance(j, Judged)] == ["reconcile", "answer"]
    assert isinstance(events[-1], Answer) and events[-1].stop_reason == "final"


async def test_an_answer_with_a_caveat_lists_what_is_uncertain_as_not_established():
    llm = ResearchModel(judge=[{"decision": "answer with caveat", "reason": "the population figure is approximate"}])
    events = await run(llm)
    [judged] = [e for e in events if isinstance(e, Judged)]
    assert judged.outcome == "caveat" and not judged.fallback
    [report] = [e for e in events if isinstance(e, Report) and not e.partial]
    assert report.unestablished == ["the population figure is approximate"]
    answer = events[-1]
    assert answer.text.endswith("## Not established\n- the population figure is approximate")
    assert len(llm.parts) == 4 and llm.parts["judge"] == 1


async def test_an_unanswerable_question_ends_abstained_with_the_reason_not_established():
    llm = ResearchModel(judge=[{"decision": "unanswerable", "reason": "no document gives the date"}])
    events = await run(llm)
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.abstained and answer.stop_reason == "final"
    [report] = [e for e in events if isinstance(e, Report) and not e.partial]
    assert report.outcome == "unanswerable" and "no document gives the date" in report.unestablished
    assert llm.parts["judge"] == 1 and len([e for e in events if isinstance(e, Plan)]) == 1


async def test_a_malformed_judge_reply_is_asked_again_and_then_read():
    llm = ResearchModel(judge=["I think the findings look fine overall.", '```json\n{"decision": "answer",}\n```'])
    events = await run(llm)
    [judged] = [e for e in events if isinstance(e, Judged)]
    assert judged.outcome == "answer" and judged.fallback == "" and llm.parts["judge"] == 2
    assert isinstance(events[-1], Answer) and events[-1].stop_reason == "final"


async def test_a_judge_that_never_replies_in_json_does_not_end_the_run():
    llm = ResearchModel(judge=["Looks fine.", ""])
    events = await run(llm)
    [judged] = [e for e in events if isinstance(e, Judged)]
    assert judged.outcome == "caveat" and "could not be read" in judged.fallback
    answer = events[-1]
    assert isinstance(answer, Answer) and {c.document_id for c in answer.citations} == {"d1", "d2", "d3"}
    assert "the judge's reply could not be read" in answer.text  # said, as a caveat


async def test_an_unreadable_plan_researches_the_question_itself():
    llm = ResearchModel(plan="Sure, I will research that.")
    events = await run(llm)
    [plan] = [e for e in events if isinstance(e, Plan)]
    assert [s.input for s in plan.steps] == [QUESTION] and llm.parts["plan"] == 2
    assert isinstance(events[-1], Answer)


async def test_parallel_sub_agents_share_the_run_budget():
    corpus = Corpus(delay_s=0.05)
    llm = ResearchModel()
    events = await run(llm, corpus, max_tokens=60000, max_tool_calls=7, max_concurrency=2, report_share=0.1)
    assert corpus.max_active == 2  # in parallel, within the limit
    running = tasks(events, "running")
    shares = [(t.budget_tokens, t.budget_tool_calls) for t in running]
    # equal shares of what the run had left after planning, the report's reserve held back
    planned = next(e for e in events if isinstance(e, Plan))
    assert planned is not None
    assert [s[1] for s in shares] == [3, 2, 2]
    tokens = {s[0] for s in shares}
    assert len(tokens) == 1 and sum(s[0] for s in shares) <= 60000 - 6000
    done = tasks(events, "done")
    answer = events[-1]
    spent = sum(t.usage.total_tokens for t in done)
    assert spent < answer.usage.total_tokens and answer.usage.llm_calls == 9
    assert all(t.usage.total_tokens <= t.budget_tokens for t in done)


async def test_a_sub_agent_over_its_token_share_stops_and_answers_from_what_it_has():
    llm = ResearchModel()
    events = await run(llm, max_tokens=900, report_share=0.1)
    running = tasks(events, "running")
    assert running and all(t.budget_tokens is not None and t.budget_tokens < 300 for t in running)
    answers = [e for e in events if isinstance(e, Answer)]
    assert answers[-1].depth == 0 and answers[-1].stop_reason == "max_tokens"
    assert any(a.depth == 1 and a.stop_reason == "max_tokens" for a in answers)


async def test_the_report_is_forced_when_the_research_time_is_up():
    corpus = Corpus(slow_word="inhabitants", slow_s=30)
    llm = ResearchModel()
    events = await run(llm, corpus, timeout_s=1.5, report_share=0.2)
    cancelled = tasks(events, "cancelled")
    assert [t.question for t in cancelled] == [PLAN[2]] and "time" in cancelled[0].note
    assert [t.step for t in tasks(events, "done")] == ["1.1", "1.2"]
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.stop_reason == "timeout"
    assert {c.document_id for c in answer.citations} == {"d1", "d2"}
    [report] = [e for e in events if isinstance(e, Report) and not e.partial]
    assert PLAN[2] in report.unestablished and PLAN[2] in answer.text
    assert "judge" not in llm.parts and llm.parts["report"] == 1  # no judging once the time is up


async def test_a_draft_report_follows_each_finished_sub_research():
    events = await run(ResearchModel())
    drafts = [e for e in events if isinstance(e, Report) and e.partial]
    assert [len(d.sections) for d in drafts] == [1, 2, 3]
    assert drafts[-1].sections[2].text == "Oslo has about 700000 inhabitants [3]."
    assert "## How many inhabitants does Oslo have?" in drafts[-1].text


class Kept:
    """Checkpoints in a dict (what a run store's step journal does for a served run)."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.asked: dict[str, int] = {}

    def key(self, kind: str, content) -> str:
        base = f"{kind}:{content}"
        n = self.asked.get(base, 0)
        self.asked[base] = n + 1
        return f"{base}:{n}"

    def take(self, key: str) -> str | None:
        return self.values.get(key)

    def keep(self, key: str, value: str) -> None:
        self.values[key] = value


async def _with_checkpoints(llm: ResearchModel, kept: Kept, corpus: Corpus) -> list:
    agent = Agent("research", llm=llm, kb=corpus)
    ctx = agent.context()
    ctx.checkpoints = kept
    kept.asked.clear()
    return [e async for e in agent.events(QUESTION, ctx)]


async def test_finished_sub_research_is_taken_from_its_checkpoint_without_a_model_or_tool_call():
    kept, first_corpus = Kept(), Corpus()
    first = await _with_checkpoints(ResearchModel(), kept, first_corpus)
    assert len(kept.values) == 3 and len(first_corpus.queries) == 3
    # the first two kept only, as when the run died in the third
    del kept.values[next(k for k in kept.values if PLAN[2] in k)]
    llm, corpus = ResearchModel(), Corpus()
    again = await _with_checkpoints(llm, kept, corpus)
    assert llm.parts == {"plan": 1, "agent": 2, "judge": 1, "report": 1}  # the sub-agents: the third only
    assert corpus.queries == [PLAN[2]]
    answer, before = again[-1], first[-1]
    assert answer.text == before.text and answer.citations == before.citations and answer.usage == before.usage

    # the sub-researches read as they did, the third done again on the budget it had
    def done(events) -> list[dict]:
        return [
            e.to_dict() | {"ts": 0, "run_id": "", "seq": 0}
            for e in events
            if isinstance(e, ResearchTask) and e.status == "done"
        ]

    assert done(again) == done(first)


async def test_an_unreadable_checkpoint_is_researched_again():
    kept = Kept()
    await _with_checkpoints(ResearchModel(), kept, Corpus())
    for key in kept.values:
        kept.values[key] = "{not json"
    llm = ResearchModel()
    events = await _with_checkpoints(llm, kept, Corpus())
    assert llm.parts["agent"] == 6 and isinstance(events[-1], Answer)


async def test_gaps_still_open_when_the_rounds_run_out_are_reported_as_not_established():
    gap = {"decision": "gap", "gaps": ["When was Oslo founded?"]}
    llm = ResearchModel(plan=PLAN[:1], judge=[gap])
    events = await run(llm, max_rounds=2)
    assert [p.attempt for p in events if isinstance(p, Plan)] == [1, 2]
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.stop_reason == "max_rounds"
    [report] = [e for e in events if isinstance(e, Report) and not e.partial]
    assert "When was Oslo founded?" in report.unestablished
    assert llm.parts["judge"] == 2


class Unreadable(ResearchModel):
    """A sub-agent that never writes a readable ReAct turn for the population question."""

    def reply(self, messages, tools):
        if "inhabitants" in messages[1].content and "Action Input" in messages[0].content:
            self.parts["agent"] = self.parts.get("agent", 0) + 1
            return "Final Answer:"
        return super().reply(messages, tools)


async def test_a_sub_agent_that_fails_is_shown_failed_and_its_question_not_established():
    llm = Unreadable()
    events = await run(llm)
    [failed] = tasks(events, "failed")
    assert failed.question == PLAN[2] and failed.note and failed.usage is not None and failed.usage.llm_calls == 3
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.stop_reason == "final"
    assert {c.document_id for c in answer.citations} == {"d1", "d2"}
    assert answer.text.endswith(f"## Not established\n- {PLAN[2]}")
    assert f"[1.3] {PLAN[2]}\n(no findings: " in llm.judge_prompts[0]  # the judge is told


async def test_a_chinese_question_is_researched_with_the_chinese_prompts():
    llm = ResearchModel(plan=["谁生产 Aria 2 耳机？"])
    agent = Agent("research", llm=llm, kb=Corpus())
    events = await collect_events(agent, "Aria 2 耳机的制造商是谁？")
    assert isinstance(events[-1], Answer)
    assert llm.report_prompts[0].startswith("问题：")
    assert events[-1].text.startswith("## 发现\nThe Aria 2") and len(events[-1].citations) == 1
    assert "发现（第 1 轮" in llm.judge_prompts[0]


async def test_the_events_of_an_agent_a_sub_agent_calls_nest_under_that_call():
    llm = ResearchModel(plan=PLAN[:1])
    helper = Agent("react", llm=llm, kb=Corpus(), name="librarian")
    agent = Agent("research", llm=llm, tools=[helper])
    events = await collect_events(agent, QUESTION)
    [call] = [e for e in events if isinstance(e, ToolCall) and e.depth == 1]
    assert call.call_id == "1.1:react_1" and call.parent_call_id == "research_1.1"
    inner = [e for e in events if e.depth == 2]
    assert inner and {e.parent_call_id for e in inner} == {"1.1:react_1"}
    assert isinstance(events[-1], Answer) and events[-1].citations[0].document_id == "d1"


async def test_questions_beyond_the_tool_calls_left_are_not_started():
    llm = ResearchModel()
    events = await run(llm, max_tool_calls=2)
    assert [(t.step, t.note) for t in tasks(events, "cancelled")] == [
        ("1.3", "not started: the run's tool calls are spent")
    ]
    assert llm.parts["agent"] == 4 and events[-1].usage.tool_calls == 2
    assert events[-1].stop_reason == "max_tool_calls" and PLAN[2] in events[-1].text


class UncitedReport(ResearchModel):
    """Writes a report that cites none of the findings."""

    def reply(self, messages, tools):
        out = super().reply(messages, tools)
        if self.report_prompts and out.startswith("## Findings"):
            return "## Findings\nThe passages do not say.\n\n## Not established\n- none"
        return out


async def test_a_report_that_cites_nothing_does_not_decide_the_question():
    events = await run(UncitedReport())
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.citations == [] and answer.abstained
    cited = (await run(ResearchModel()))[-1]
    assert cited.citations and not cited.abstained  # the same run with a cited report decides it
