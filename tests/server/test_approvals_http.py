"""Approvals over REST on a real server: answers, bad answers, another tenant, the audit."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from reasonloop.config import APIKeySettings, ApprovalSettings
from reasonloop.server import create_app
from reasonloop.server.auth import hash_key
from tests.runs.approval_helpers import AskingModel, approving_runner
from tests.runs.resume_helpers import Tally
from tests.server.helpers import event_data, make_settings, serve, sse_events

pytestmark = pytest.mark.integration  # served on sockets, or started in processes

KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789"}


async def pending(client: httpx.AsyncClient, run_id: str, count: int = 1) -> list[dict]:
    """The run's approvals once ``count`` of them are pending."""
    async with asyncio.timeout(20):
        while True:
            views = (await client.get(f"/v1/runs/{run_id}/approvals")).json()
            waiting = [v for v in views if v["status"] == "pending"]
            if len(waiting) >= count:
                return waiting
            await asyncio.sleep(0.05)


async def test_answers_over_rest_only_from_the_runs_tenant_with_the_audit(tmp_path):
    approvals = ApprovalSettings(tools={"count": "always"})
    settings = make_settings(
        tmp_path,
        api_keys=[
            APIKeySettings(sha256=hash_key(KEYS["alice"]), tenant="acme", name="alice", principal="alice"),
            APIKeySettings(sha256=hash_key(KEYS["bob"]), tenant="globex", name="bob"),
        ],
    )
    settings.approvals = approvals
    tally = Tally(tmp_path / "tool.log")
    model = AskingModel(calls=1)
    runner = approving_runner(tmp_path, settings.runs, tally, model, approvals)
    app = create_app(settings, runner=runner)
    async with (
        serve(app, settings) as url,
        httpx.AsyncClient(base_url=url, timeout=20, headers={"Authorization": f"Bearer {KEYS['alice']}"}) as alice,
        httpx.AsyncClient(base_url=url, timeout=20, headers={"Authorization": f"Bearer {KEYS['bob']}"}) as bob,
    ):
        run_id = (await alice.post("/v1/runs", json={"question": "count", "agent": "counter"})).json()["run_id"]
        [view] = await pending(alice, run_id)
        assert (view["tool"], view["arguments_asked"]) == ("count", {"n": 0})
        assert view["arguments_schema"]["required"] == ["n"]
        assert (await alice.get(f"/v1/runs/{run_id}")).json()["run"]["status"] == "awaiting_approval"
        target = f"/v1/runs/{run_id}/approvals/{view['approval_id']}"

        # Another tenant: the same 404 as a run that does not exist, whatever it asks.
        theirs = await bob.post(target, json={"decision": "confirm"})
        nowhere = await bob.post(f"/v1/runs/run_nope/approvals/{view['approval_id']}", json={"decision": "confirm"})
        assert theirs.status_code == nowhere.status_code == 404
        assert theirs.json()["error"]["code"] == nowhere.json()["error"]["code"] == "run.not_found"
        assert theirs.text.replace(run_id, "X") == nowhere.text.replace("run_nope", "X")  # it learns nothing
        assert (await bob.get(f"/v1/runs/{run_id}/approvals")).status_code == 404

        bad = await alice.post(target, json={"decision": "modify", "arguments": {"n": "x"}})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "approval.invalid"
        assert "not of type 'integer'" in bad.json()["error"]["message"]
        unknown = await alice.post(f"/v1/runs/{run_id}/approvals/apr_nope", json={"decision": "confirm"})
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "run.approval_not_found"
        assert (await alice.post(target, json={"decision": "maybe"})).status_code == 422
        assert tally.runs == 0 and (await pending(alice, run_id))[0]["approval_id"] == view["approval_id"]

        answered = await alice.post(target, json={"decision": "modify", "arguments": {"n": 5}, "reason": "five"})
        assert answered.status_code == 200
        again = await alice.post(target, json={"decision": "reject"})
        assert again.status_code in (404, 409)  # decided (or, already, ended)
        events = event_data(await sse_events(alice, f"/v1/runs/{run_id}/events"))
        [audit] = (await alice.get(f"/v1/runs/{run_id}/approvals")).json()

    assert tally.logged() == ["5"]
    assert events[-1]["type"] == "answer"
    types = [e["type"] for e in events]
    assert types.index("approval_requested") < types.index("approval_decided") < types.index("tool_result")
    assert audit["status"] == "modified" and audit["arguments_run"] == {"n": 5} and audit["decision_reason"] == "five"
    assert audit["by"] == {"key": "alice", "tenant": "acme", "principal": "alice", "via": "rest"}  # the key's reader
    decided = next(e for e in events if e["type"] == "approval_decided")
    assert decided["by"] == audit["by"] and decided["arguments_asked"] == {"n": 0}
