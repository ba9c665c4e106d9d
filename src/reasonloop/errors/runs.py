"""Errors of runs and conversations: one that is not there or has ended, an approval already decided,
a full queue or an unreachable store, and a strategy that cannot go on (a guard, a failed plan
step, replies in no readable format). Re-exported by :mod:`reasonloop.errors`."""

from __future__ import annotations

from reasonloop.errors.base import ReasonLoopError

__all__ = [
    "ApprovalAnswered",
    "ApprovalNotFound",
    "ConversationBusy",
    "ConversationNotFound",
    "FormatNotFollowed",
    "GuardTripped",
    "PlanStepFailed",
    "RunError",
    "RunFinished",
    "RunNotFound",
    "RunQueueFull",
    "RunStoreUnavailable",
]


class RunError(ReasonLoopError):
    code = "run.error"


class RunNotFound(RunError):
    code = "run.not_found"


class GuardTripped(RunError):
    code = "agent.guard.tool_call_required"


class ConversationNotFound(RunError):
    code = "conversation.not_found"


class ConversationBusy(RunError):
    """A run of the conversation is still in flight: the next question waits for its answer."""

    code = "conversation.busy"


class RunFinished(RunError):
    """A stop (or other change) was asked of a run that has already ended; ``status`` says how."""

    code = "run.finished"


class ApprovalNotFound(RunError):
    """The run has no approval of that id waiting (never asked, or its run has ended)."""

    code = "run.approval_not_found"


class ApprovalAnswered(RunError):
    """The approval was decided already (by another approver, or by its timeout)."""

    code = "run.approval_answered"


class RunQueueFull(RunError):
    """The server is running its maximum of runs and its queue is full; retry later."""

    code = "run.queue_full"
    retryable = True


class RunStoreUnavailable(RunError):
    """The run store (SQLite file or Redis server) cannot be reached or written."""

    code = "run.store_unavailable"
    retryable = True


class PlanStepFailed(RunError):
    """A plan step could not run: unknown tool, bad reference, dependency cycle, failed input or timeout."""

    code = "agent.plan_step_failed"


class FormatNotFollowed(RunError):
    """The model's replies could not be read in the strategy's format (ReAct text, tool calls, a
    ReWOO plan), so the run ended instead of guessing; ``details`` name the strategy, the model,
    the last problem and ``suggestion``, a strategy the model can run."""

    code = "agent.format_not_followed"
