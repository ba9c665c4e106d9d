"""The events of a tool call that waits for a person: the request for approval, and the decision.

Their own module because together they are the record of an approval (what was asked, who decided,
what ran), which the approval service and every surface that answers one read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from reasonloop.events.base import _EventBase


@dataclass(slots=True, kw_only=True)
class ApprovalRequested(_EventBase):
    """A tool call waits for a person to approve it: the run is ``awaiting_approval`` until someone
    answers (``POST /v1/runs/{id}/approvals/{approval_id}``, a WebSocket ``approve`` frame, MCP,
    the web UI or the CLI), and its time budget does not run meanwhile."""

    type: Literal["approval_requested"] = "approval_requested"
    approval_id: str
    """What an answer names (the same after the run resumes elsewhere)."""
    call_id: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    """The arguments the model asked for."""
    reason: str = ""
    """Why approval is needed (the policy that asks for it)."""
    schema: dict[str, Any] = field(default_factory=dict)
    """The tool's arguments' JSON schema: modified arguments must validate against it."""
    expires_at: float | None = None
    """When the call is rejected unanswered (Unix seconds); None: it waits for an answer."""


@dataclass(slots=True, kw_only=True)
class ApprovalDecided(_EventBase):
    """A person (or the timeout) decided on a tool call that waited: who, when, what ran."""

    type: Literal["approval_decided"] = "approval_decided"
    approval_id: str
    call_id: str
    tool: str
    decision: Literal["confirm", "modify", "reject"]
    arguments_asked: dict[str, Any] = field(default_factory=dict)
    arguments_run: dict[str, Any] | None = None
    """The arguments the tool ran with (None when rejected)."""
    reason: str = ""
    """The approver's reason (a rejection's is what the model reads)."""
    by: dict[str, Any] = field(default_factory=dict)
    """Who decided: ``key`` (the API key's name), ``tenant``, ``principal`` (when the key names
    one) and ``via`` (``rest``, ``ws``, ``mcp``, ``web``, ``cli``, ``timeout``)."""
    decided_at: float = 0.0
    """When the decision was taken (Unix seconds; ``ts`` is when the run read it)."""
