"""Answers to tool calls waiting for approval: the ask, the decision, the approver's contract, and
the check an answer must pass before it is taken.

Beneath both :mod:`reasonloop.tools.approval` (the policy and the gate a run's tool calls go
through) and :mod:`reasonloop.runs.approvals` (where served runs keep asks and answers), so the run
manager takes answers without loading the tool layer.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, UnknownType
from pydantic import BaseModel, Field

from reasonloop.errors import ApprovalInvalid

__all__ = ["Announce", "ApprovalAsk", "Approver", "Decision", "check_answer"]


@dataclass(slots=True)
class ApprovalAsk:
    """A tool call that waits for a person."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    reason: str
    schema: dict[str, Any] = field(default_factory=dict)
    approval_id: str = ""
    """Set by the approver when it makes the ask known."""
    expires_at: float | None = None
    """Set by the approver: when the ask is rejected unanswered (Unix seconds)."""


class Decision(BaseModel):
    """An answer to an :class:`ApprovalAsk`."""

    decision: Literal["confirm", "modify", "reject"]
    arguments: dict[str, Any] | None = None
    """The arguments to run with (``modify`` only)."""
    reason: str = Field(default="", max_length=4000)
    by: dict[str, Any] = Field(default_factory=dict)
    """Who decided (``key``, ``tenant``, ``principal``, ``via``)."""
    decided_at: float = Field(default_factory=time.time)


Announce = Callable[[ApprovalAsk], Awaitable[None]]


class Approver(Protocol):
    """Where a run's approvals are asked and answered."""

    async def decide(self, ask: ApprovalAsk, announce: Announce) -> Decision:
        """Make ``ask`` known (setting its ``approval_id`` and ``expires_at``), call
        ``announce(ask)`` once it is, and return the answer (a rejection when none comes in time)."""
        ...


def check_answer(decision: Decision, schema: Mapping[str, Any]) -> Decision:
    """``decision`` when it can be taken for a call of a tool with arguments' JSON ``schema``.

    Raises:
        ApprovalInvalid: ``modify`` without arguments, or with arguments the schema refuses (the
            message names each problem); arguments given with ``confirm`` or ``reject``.
    """
    if decision.decision != "modify":
        if decision.arguments is not None:
            raise ApprovalInvalid(f"arguments are given only with 'modify', not with {decision.decision!r}")
        return decision
    if decision.arguments is None:
        raise ApprovalInvalid("'modify' needs the arguments to run the tool with")
    try:
        Draft202012Validator.check_schema(dict(schema))
        validator = Draft202012Validator(dict(schema))
        problems = sorted(validator.iter_errors(decision.arguments), key=lambda e: list(e.absolute_path))
    except (SchemaError, UnknownType):  # a server's schema we cannot read: the tool checks the arguments itself
        return decision
    if problems:
        said = "; ".join(f"{'.'.join(map(str, p.absolute_path)) or '(arguments)'}: {p.message}" for p in problems[:5])
        raise ApprovalInvalid(f"the modified arguments do not fit the tool's schema: {said}", field="arguments")
    return decision
