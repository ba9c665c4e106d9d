"""Tool calls a person approves, in a served run: policies, answers, the timeout, the audit, the budget."""

from __future__ import annotations

import asyncio
import json

import pytest

from reasonloop.config import ApprovalSettings, RunsSettings
from reasonloop.errors import ApprovalAnswered, ApprovalInvalid, ApprovalNotFound, RunNotFound
from reasonloop.events import Answer, ApprovalDecided, ApprovalRequested, ToolResult
from reasonloop.runs.manager import RunManager
from reasonloop.runs.stores.sqlite.store import SQLiteRunStore
from reasonloop.tools.approval import Decision
from tests.runs.approval_helpers import ANSWER, AskingModel, approving_runner, next_request, request, until_end
from tests.runs.resume_helpers import Tally

BY = {"key": "ops", "tenant": "default", "principal": None, "via": "rest"}


class Served:
    """A run manager on a SQLite store whose runs' ``count`` calls follow the given policies."""

    def __init__(self, tmp_path, approvals: ApprovalSettings, **options) -> None:
        self.tmp = tmp_path
        self.runs = RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite"))
        self.tally = Tally(tmp_path / "tool.log")
        self.model = AskingModel(calls=options.pop("calls", 2))
        self.approvals = approvals
        self.options = options

    async def __aenter__(self) -> RunManager:
        self.store = SQLiteRunStore(self.runs)
        await self.store.open()
        runner = approving_runner(self.tmp, self.runs, self.tally, self.model, self.approvals, **self.options)
        self.manager = RunManager(self.store, runner, self.runs, approvals=self.approvals)
        await self.manager.open()
        return self.manager

    async def __aexit__(self, *exc) -> None:
        await self.manager.close()
        await self.store.close()


async def test_never_is_the_default_and_no_call_waits(tmp_path):
    async with Served(tmp_path, ApprovalSettings()) as manager:
        record = await manager.start(request())
        events = await until_end(manager, record.run_id)
    assert not [e for e in events if isinstance(e, ApprovalRequested | ApprovalDecided)]
    assert isinstance(events[-1], Answer) and events[-1].text == ANSWER


async def test_always_asks_every_call_and_a_confirmed_call_runs_as_asked(tmp_path):
    served = Served(tmp_path, ApprovalSettings(tools={"count": "always"}))
    async with served as manager:
        run_id = (await manager.start(request())).run_id
        asked = await next_request(manager, run_id)
        assert (asked.tool, asked.arguments, asked.call_id) == ("count", {"n": 0}, "call0")
        assert "[approvals] tools" in asked.reason and asked.schema["properties"]["n"]["type"] == "integer"
        assert (await manager.get(run_id)).status == "awaiting_approval"
        assert served.tally.runs == 0  # nothing ran before the answer
        await manager.answer_approval(run_id, asked.approval_id, Decision(decision="confirm", by=BY))
        second = await next_request(manager, run_id, asked.seq)
        assert second.arguments == {"n": 1} and second.approval_id != asked.approval_id
        await manager.answer_approval(run_id, second.approval_id, Decision(decision="confirm", by=BY))
        events = await until_end(manager, run_id)
        audit = await manager.approvals_of(run_id)
        stored = await served.store.get_run(run_id)
    assert served.tally.logged() == ["0", "1"]
    assert isinstance(events[-1], Answer) and events[-1].text == ANSWER
    assert [(a.status, a.arguments_asked, a.arguments_run, a.by) for a in audit] == [
        ("confirmed", {"n": 0}, {"n": 0}, BY),
        ("confirmed", {"n": 1}, {"n": 1}, BY),
    ]
    decided = [e for e in events if isinstance(e, ApprovalDecided)]
    assert [d.decision for d in decided] == ["confirm", "confirm"] and all(d.decided_at > 0 for d in decided)
    assert stored is not None and stored.status == "completed"


async def test_once_asks_the_first_call_of_a_run_only(tmp_path):
    served = Served(tmp_path, ApprovalSettings(), agent_approvals={"count": "once"}, calls=3)
    async with served as manager:
        run_id = (await manager.start(request())).run_id
        asked = await next_request(manager, run_id)
        assert "the agent's approvals" in asked.reason
        await manager.answer_approval(run_id, asked.approval_id, Decision(decision="confirm", by=BY))
        events = await until_end(manager, run_id)
    assert len([e for e in events if isinstance(e, ApprovalRequested)]) == 1
    assert served.tally.logged() == ["0", "1", "2"]


async def test_once_asks_again_after_a_rejection(tmp_path):
    served = Served(tmp_path, ApprovalSettings(tools={"count": "once"}))
    async with served as manager:
        run_id = (await manager.start(request())).run_id
        first = await next_request(manager, run_id)
        await manager.answer_approval(run_id, first.approval_id, Decision(decision="reject", reason="not now"))
        second = await next_request(manager, run_id, first.seq)
        await manager.answer_approval(run_id, second.approval_id, Decision(decision="confirm"))
        await until_end(manager, run_id)
    assert served.tally.logged() == ["1"]


async def test_a_modified_call_runs_with_the_approvers_arguments(tmp_path):
    served = Served(tmp_path, ApprovalSettings(tools={"count": "always"}), calls=1)
    async with served as manager:
        run_id = (await manager.start(request())).run_id
        asked = await next_request(manager, run_id)
        await manager.answer_approval(run_id, asked.approval_id, Decision(decision="modify", arguments={"n": 7}))
        events = await until_end(manager, run_id)
        [view] = await manager.approvals_of(run_id)
    assert served.tally.logged() == ["7"]
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert result.output == "counted 7" and served.model.observations() == ["counted 7"]
    assert (view.status, view.arguments_asked, view.arguments_run) == ("modified", {"n": 0}, {"n": 7})


@pytest.mark.parametrize(
    ("decision", "said"),
    [
        (Decision(decision="modify", arguments={"n": "seven"}), "n: 'seven' is not of type 'integer'"),
        (Decision(decision="modify", arguments={}), "'n' is a required property"),
        (Decision(decision="modify"), "'modify' needs the arguments"),
        (Decision(decision="confirm", arguments={"n": 1}), "only with 'modify'"),
    ],
)
async def test_a_bad_answer_is_refused_clearly_and_the_approval_stays_pending(tmp_path, decision, said):
    served = Served(tmp_path, ApprovalSettings(tools={"count": "always"}), calls=1)
    async with served as manager:
        run_id = (await manager.start(request())).run_id
        asked = await next_request(manager, run_id)
        with pytest.raises(ApprovalInvalid) as refused:
            await manager.answer_approval(run_id, asked.approval_id, decision)
        assert said in refused.value.message
        assert (await manager.get(run_id)).status == "awaiting_approval"
        [view] = await manager.approvals_of(run_id)
        assert view.status == "pending" and served.tally.runs == 0
        await manager.answer_approval(run_id, asked.approval_id, Decision(decision="confirm"))
        await until_end(manager, run_id)
    assert served.tally.logged() == ["0"]


async def test_a_rejection_is_what_the_model_reads_and_the_tool_never_runs(tmp_path):
    served = Served(tmp_path, ApprovalSettings(tools={"count": "always"}), calls=1)
    async with served as manager:
        run_id = (await manager.start(request())).run_id
        asked = await next_request(manager, run_id)
        await manager.answer_approval(run_id, asked.approval_id, Decision(decision="reject", reason="counting is off"))
        with pytest.raises(ApprovalAnswered):  # the first answer holds
            await manager.answer_approval(run_id, asked.approval_id, Decision(decision="confirm"))
        events = await until_end(manager, run_id)
    assert served.tally.runs == 0
    [observation] = served.model.observations()
    assert "rejected by its approver: counting is off" in observation and "tool.rejected" not in observation
    assert json.loads(observation)["type"] == "ToolRejected"
    assert isinstance(events[-1], Answer) and events[-1].text == ANSWER


async def test_an_unanswered_call_is_rejected_after_the_timeout(tmp_path):
    served = Served(tmp_path, ApprovalSettings(tools={"count": "always"}, timeout_s=0.3), calls=1)
    async with served as manager:
        run_id = (await manager.start(request())).run_id
        asked = await next_request(manager, run_id)
        assert asked.expires_at is not None and asked.expires_at - asked.ts <= 0.31
        events = await until_end(manager, run_id)
        [view] = await manager.approvals_of(run_id)
        with pytest.raises(ApprovalNotFound):  # the run has ended: nothing waits
            await manager.answer_approval(run_id, asked.approval_id, Decision(decision="confirm"))
    assert served.tally.runs == 0
    assert (view.status, view.by, view.decision_reason) == ("rejected", {"via": "timeout"}, "no answer within 0.3s")
    assert "no answer within 0.3s" in served.model.observations()[0]
    assert isinstance(events[-1], Answer)


async def test_without_a_timeout_a_call_waits(tmp_path):
    served = Served(tmp_path, ApprovalSettings(tools={"count": "always"}), calls=1)
    async with served as manager:
        run_id = (await manager.start(request())).run_id
        asked = await next_request(manager, run_id)
        assert asked.expires_at is None
        await asyncio.sleep(1.2)
        assert (await manager.get(run_id)).status == "awaiting_approval"
        await manager.answer_approval(run_id, asked.approval_id, Decision(decision="confirm"))
        await until_end(manager, run_id)
    assert served.tally.logged() == ["0"]


async def test_the_time_budget_stands_still_while_a_call_waits(tmp_path):
    served = Served(tmp_path, ApprovalSettings(tools={"count": "always"}), calls=1, settings={"timeout_s": 0.5})
    async with served as manager:
        run_id = (await manager.start(request())).run_id
        asked = await next_request(manager, run_id)
        await asyncio.sleep(1.0)  # twice the run's time budget
        await manager.answer_approval(run_id, asked.approval_id, Decision(decision="confirm"))
        events = await until_end(manager, run_id)
    assert served.tally.logged() == ["0"]
    assert isinstance(events[-1], Answer) and events[-1].stop_reason == "final"


class ResearchingModel(AskingModel):
    """A research run of one question whose sub-agent (native tool calls) calls ``count`` once."""

    def _script(self, messages, tools):
        system = str(messages[0].content)
        if '"questions"' in system:
            return json.dumps({"questions": ["How many are there?"]})
        if '"decision"' in system:
            return json.dumps({"decision": "answer", "reason": "counted"})
        if "## Not established" in system:
            return "## Findings\nCounted once.\n\n## Not established\n- none"
        return super()._script(messages, tools)


async def test_a_research_run_s_time_budget_stands_still_while_a_sub_agent_s_call_waits(tmp_path):
    served = Served(
        tmp_path,
        ApprovalSettings(tools={"count": "always"}),
        reasoning="research",
        settings={"agent": "toolcall", "timeout_s": 1.0, "report_share": 0.2, "max_rounds": 1},
    )
    served.model = ResearchingModel(calls=1)
    async with served as manager:
        run_id = (await manager.start(request())).run_id
        asked = await next_request(manager, run_id)
        await asyncio.sleep(1.5)  # longer than the run's whole time budget
        await manager.answer_approval(run_id, asked.approval_id, Decision(decision="confirm"))
        events = await until_end(manager, run_id)
    assert served.tally.logged() == ["0"]
    answer = events[-1]
    assert isinstance(answer, Answer) and answer.stop_reason == "final", answer
    [result] = [e for e in events if isinstance(e, ToolResult) and e.tool == "count"]
    assert result.error is None


async def test_another_tenant_cannot_answer_or_read_and_learns_nothing(tmp_path):
    served = Served(tmp_path, ApprovalSettings(tools={"count": "always"}), calls=1)
    async with served as manager:
        run_id = (await manager.start(request(tenant="acme"))).run_id
        asked = await next_request(manager, run_id)
        with pytest.raises(RunNotFound) as theirs:
            await manager.answer_approval(run_id, asked.approval_id, Decision(decision="confirm"), tenant="other")
        with pytest.raises(RunNotFound) as missing:
            await manager.answer_approval("run_nope", asked.approval_id, Decision(decision="confirm"), tenant="other")
        with pytest.raises(RunNotFound):
            await manager.approvals_of(run_id, tenant="other")
        assert theirs.value.message.replace(run_id, "X") == missing.value.message.replace("run_nope", "X")
        with pytest.raises(ApprovalNotFound):
            await manager.answer_approval(run_id, "apr_nope", Decision(decision="confirm"), tenant="acme")
        assert served.tally.runs == 0
        await manager.answer_approval(run_id, asked.approval_id, Decision(decision="confirm"), tenant="acme")
        await until_end(manager, run_id)
    assert served.tally.logged() == ["0"]


async def test_a_waiting_run_gives_its_slot_to_a_queued_one(tmp_path):
    served = Served(tmp_path, ApprovalSettings(tools={"count": "always"}), calls=1)
    served.runs = RunsSettings(sqlite_path=str(tmp_path / "runs.sqlite"), max_concurrent=1)
    async with served as manager:
        waiting = (await manager.start(request())).run_id
        asked = await next_request(manager, waiting)
        other = (await manager.start(request("again"))).run_id
        second = await next_request(manager, other)  # it ran while the first waits
        await manager.answer_approval(other, second.approval_id, Decision(decision="confirm"))
        await manager.answer_approval(waiting, asked.approval_id, Decision(decision="confirm"))
        await until_end(manager, other)
        await until_end(manager, waiting)
    assert sorted(served.tally.logged()) == ["0", "0"]


async def test_a_stopped_run_leaves_its_approval_unanswered(tmp_path):
    served = Served(tmp_path, ApprovalSettings(tools={"count": "always"}), calls=1)
    async with served as manager:
        run_id = (await manager.start(request())).run_id
        await next_request(manager, run_id)
        record = await manager.stop(run_id)
        [view] = await manager.approvals_of(run_id)
    assert record.status == "stopped" and view.status == "unanswered" and served.tally.runs == 0
