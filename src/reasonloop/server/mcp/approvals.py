"""How ``ask`` asks its MCP client about a tool call waiting for approval: by elicitation during the
call when the client's session takes server requests, or with an ``InputRequiredResult`` whose
answer comes with the client's retry of the call. Its own module: the form, the reading of an answer
and the two ways of asking are one concept, apart from the tools that use them."""

from __future__ import annotations

import json
import logging
from typing import Any, Literal

from mcp.server.elicitation import render_elicitation_schema
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import NoBackChannelError
from mcp.types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult
from pydantic import BaseModel, Field, ValidationError

from reasonloop.errors import ApprovalAnswered, ApprovalInvalid, ApprovalNotFound, RequestInvalid
from reasonloop.events import ApprovalRequested
from reasonloop.runs.approvals import ApprovalAnswer
from reasonloop.server.deps import ServerState
from reasonloop.server.errors import invalid_arguments
from reasonloop.server.gate import Caller, decider

__all__ = ["APPROVAL_FORM_SCHEMA", "ApprovalForm", "can_elicit", "elicit_approval", "take_answer", "waited_approval"]

log = logging.getLogger(__name__)


class ApprovalForm(BaseModel):
    """What ``ask`` asks its client (by elicitation) about a tool call waiting for approval."""

    decision: Literal["confirm", "modify", "reject"] = Field(
        description="confirm: run it as asked; modify: run it with the arguments below; reject: do not run it"
    )
    arguments: str = Field(default="", description="With modify: the arguments to run the tool with, a JSON object")
    reason: str = Field(default="", description="Why (with reject, what the model reads)")


APPROVAL_FORM_SCHEMA = render_elicitation_schema(ApprovalForm)
"""The form as an elicitation's ``requested_schema``."""

_ELICIT_TRIES = 3
"""Answers ``ask`` takes from its client for one approval (an unfit one is asked again, saying why)."""


def can_elicit(ctx: Context) -> bool:
    """Whether the client of this request answers elicitations."""
    try:
        capabilities = ctx.request_context.session.client_capabilities
    except (AttributeError, ValueError):
        return False
    return capabilities is not None and getattr(capabilities, "elicitation", None) is not None


def _question(event: ApprovalRequested) -> str:
    arguments = json.dumps(event.arguments, ensure_ascii=False)
    return f"The run wants to call {event.tool} with {arguments} ({event.reason}). Confirm, modify or reject?"


def _read_answer(action: str, content: Any) -> tuple[ApprovalAnswer | None, str]:
    """The answer an elicitation's result gives (None: cancelled, the approval stays pending), or
    what is wrong with it."""
    if action == "cancel":
        return None, ""
    if action == "decline":
        return ApprovalAnswer(decision="reject", reason="declined in the MCP client"), ""
    try:
        form = ApprovalForm.model_validate(content or {})
    except ValidationError as exc:
        return None, f"The answer does not fit the form ({invalid_arguments(exc).message})."
    try:
        given = json.loads(form.arguments) if form.decision == "modify" and form.arguments.strip() else None
    except json.JSONDecodeError as exc:
        return None, f"The arguments are not JSON ({exc.msg})."
    if form.decision == "modify" and not isinstance(given, dict):
        return None, "Modify needs the arguments as a JSON object."
    return ApprovalAnswer(decision=form.decision, arguments=given, reason=form.reason), ""


async def _give(state: ServerState, run_id: str, approval_id: str, who: Caller, answer: ApprovalAnswer) -> str:
    """Answer the approval; what is wrong with the answer when it cannot be taken ("" when taken,
    or when it was answered elsewhere meanwhile)."""
    try:
        await state.runs.answer_approval(run_id, approval_id, answer.decision_by(decider(who, "mcp")), who.tenant)
    except ApprovalInvalid as exc:
        return exc.message + "."
    except (ApprovalAnswered, ApprovalNotFound):
        pass
    return ""


def _input_required(event: ApprovalRequested, problem: str = "") -> InputRequiredResult:
    """Ask the client about the approval with its retry of the call (protocol 2026-07-28)."""
    asked = ElicitRequest(
        params=ElicitRequestFormParams(
            message=f"{problem}\n{_question(event)}".strip(),
            requested_schema=APPROVAL_FORM_SCHEMA,
        )
    )
    waited = {"run_id": event.run_id, "event": event.to_dict()}
    return InputRequiredResult(input_requests={"approval": asked}, request_state=json.dumps(waited))


def waited_approval(request_state: str | None) -> tuple[str, ApprovalRequested, int] | None:
    """The run, the approval and where its stream was, from the state ``_input_required`` gave the client."""
    if not request_state:
        return None
    try:
        waited = json.loads(request_state)
        event = ApprovalRequested(**{k: v for k, v in waited["event"].items() if k != "type"})
        return str(waited["run_id"]), event, int(event.seq)
    except (ValueError, TypeError, KeyError) as exc:
        raise RequestInvalid(f"the request state of this retry cannot be read ({exc})") from None


async def take_answer(
    state: ServerState, run_id: str, who: Caller, event: ApprovalRequested, responses: Any
) -> InputRequiredResult | None:
    """Answer the approval with what the client's retry carries; the question again when unfit."""
    given = (responses or {}).get("approval")
    if given is None:
        return _input_required(event)
    answer, problem = _read_answer(given.action, given.content)
    if answer is not None:
        problem = await _give(state, run_id, event.approval_id, who, answer)
    return _input_required(event, problem) if problem else None


async def elicit_approval(
    state: ServerState, run_id: str, who: Caller, event: ApprovalRequested, ctx: Context
) -> InputRequiredResult | None:
    """Ask the client about a tool call waiting for approval and answer it with what it says; a
    client whose session takes no server requests is asked with the call's result instead (which
    is returned). A cancelled elicitation, or one that fails, leaves the approval pending."""
    problem = ""
    for _ in range(_ELICIT_TRIES):
        try:
            result = await ctx.elicit(f"{problem}\n{_question(event)}".strip(), ApprovalForm)
        except NoBackChannelError:
            return _input_required(event, problem)
        except Exception as exc:  # a client that fails the elicitation: someone else may answer
            log.info("MCP elicitation for approval %s failed: %s", event.approval_id, exc)
            return None
        content = result.data.model_dump() if result.action == "accept" else None
        answer, problem = _read_answer(result.action, content)
        if answer is None and not problem:
            return None
        if answer is not None:
            problem = await _give(state, run_id, event.approval_id, who, answer)
        if not problem:
            return None
    return None
