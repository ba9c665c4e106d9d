"""Errors with stable string codes.

Every failure reasonloop reports carries a ``code`` that scripts, HTTP clients and
tests can match on; the message is for people and may change. The tree::

    ReasonLoopError                      reasonloop.error
    ├── ConfigError                      config.invalid
    │   ├── AgentConfigError             agent.config_invalid  (a declared agent's bad reference)
    │   └── ModeInvalid                  mode.invalid          (unknown mode, mode with a strategy, strategy missing)
    ├── PluginError                      plugin.error
    │   ├── PluginNotFound               plugin.not_found
    │   ├── PluginLoadFailed             plugin.load_failed
    │   └── DuplicatePlugin              plugin.duplicate
    ├── LLMError                         llm.error
    │   ├── LLMNotConfigured             llm.not_configured
    │   ├── LLMAuthError                 llm.auth
    │   ├── LLMRateLimited               llm.rate_limited      (retryable)
    │   ├── LLMUnreachable               llm.unreachable       (retryable)
    │   ├── LLMTimeout                   llm.timeout           (retryable)
    │   ├── LLMServerError               llm.server_error      (retryable)
    │   ├── LLMBadRequest                llm.bad_request
    │   ├── LLMToolSchemaRejected        llm.tool_schema_rejected
    │   ├── LLMNotSupported              llm.not_supported
    │   └── LLMBadResponse               llm.bad_response
    ├── ToolError                        tool.error
    │   ├── ToolNotFound                 tool.not_found
    │   ├── ToolArgumentsInvalid         tool.invalid_arguments
    │   ├── ToolTimeout                  tool.timeout
    │   ├── ToolBlocked                  tool.blocked          (policy refused the call)
    │   │   └── ToolRejected             tool.rejected         (the person asked to approve it said no)
    │   ├── ToolNetworkError             tool.network
    │   ├── ToolUnavailable              tool.unavailable      (its backend, e.g. an MCP server, is down)
    │   ├── ToolBudgetExhausted          tool.budget_exhausted (the run's tool-call budget is spent)
    │   ├── AgentDepthExceeded           agent.depth_exceeded  (a sub-agent call nested too deep; a ToolBlocked)
    │   ├── AgentRecursion               agent.recursion       (an agent already on the stack; a ToolBlocked)
    │   └── SubAgentFailed               agent.sub_agent_failed
    ├── KBError                          kb.error
    │   ├── KBModelMismatch              kb.model_mismatch
    │   ├── KBLoadError                  kb.load_error
    │   ├── KBUnavailable                kb.unavailable
    │   ├── DocumentNotFound             kb.document_not_found
    │   └── UploadTooLarge               kb.upload_too_large
    ├── RunError                         run.error
    │   ├── RunNotFound                  run.not_found
    │   ├── GuardTripped                 agent.guard.tool_call_required
    │   ├── ConversationNotFound         conversation.not_found
    │   ├── RunFinished                  run.finished
    │   ├── ApprovalNotFound             run.approval_not_found (no such pending approval in the run)
    │   ├── ApprovalAnswered             run.approval_answered (it was decided already)
    │   ├── RunQueueFull                 run.queue_full        (retryable)
    │   ├── RunStoreUnavailable          run.store_unavailable (retryable)
    │   ├── PlanStepFailed               agent.plan_step_failed (a ReWOO step could not run)
    │   └── FormatNotFollowed            agent.format_not_followed (the model's replies follow no readable format)
    ├── EvalDataError                    eval.bad_data         (an evaluation set's file, line and field)
    ├── RequestInvalid                   request.invalid
    │   ├── RequestNotFound              request.not_found     (no such path)
    │   ├── ApprovalInvalid              approval.invalid      (an answer that does not fit: bad arguments)
    │   └── MethodNotAllowed             request.method_not_allowed
    ├── AuthError                        auth.invalid_key
    └── RateLimited                      auth.rate_limited     (retryable)

Codes are class attributes, so ``except LLMError`` catches every provider failure and
``err.code`` says which one.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "AgentConfigError",
    "AgentDepthExceeded",
    "AgentRecursion",
    "ApprovalAnswered",
    "ApprovalInvalid",
    "ApprovalNotFound",
    "AuthError",
    "ConfigError",
    "ConversationBusy",
    "ConversationNotFound",
    "CrossSiteRefused",
    "DocumentNotFound",
    "DuplicatePlugin",
    "EvalDataError",
    "FormatNotFollowed",
    "GuardTripped",
    "KBEmpty",
    "KBError",
    "KBLoadError",
    "KBModelMismatch",
    "KBUnavailable",
    "LLMAuthError",
    "LLMBadRequest",
    "LLMBadResponse",
    "LLMError",
    "LLMNotConfigured",
    "LLMNotSupported",
    "LLMRateLimited",
    "LLMServerError",
    "LLMTimeout",
    "LLMToolSchemaRejected",
    "LLMUnreachable",
    "MethodNotAllowed",
    "ModeInvalid",
    "ModelNotFound",
    "PlanStepFailed",
    "PluginError",
    "PluginLoadFailed",
    "PluginNotFound",
    "RateLimited",
    "ReasonLoopError",
    "RequestInvalid",
    "RequestNotFound",
    "RunError",
    "RunFinished",
    "RunNotFound",
    "RunQueueFull",
    "RunStoreUnavailable",
    "SubAgentFailed",
    "ToolArgumentsInvalid",
    "ToolBlocked",
    "ToolBudgetExhausted",
    "ToolError",
    "ToolNetworkError",
    "ToolNotFound",
    "ToolRejected",
    "ToolTimeout",
    "ToolUnavailable",
    "UploadTooLarge",
]


class ReasonLoopError(Exception):
    """Root of every error reasonloop raises on purpose.

    Args:
        message: One line for people.
        **details: Structured context (key names, ids, status codes) kept on ``details``.
    """

    code: ClassVar[str] = "reasonloop.error"
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """The error as JSON-ready data: ``{"code", "message", **details}``."""
        return {"code": self.code, "message": self.message, **self.details}


class ConfigError(ReasonLoopError):
    code = "config.invalid"


class ModeInvalid(ConfigError):
    """An unknown thinking mode, a mode given with a strategy, or a mode whose strategy is not installed."""

    code = "mode.invalid"


class PluginError(ReasonLoopError):
    code = "plugin.error"


class PluginNotFound(PluginError):
    code = "plugin.not_found"


class ModelNotFound(PluginNotFound):
    """The OpenAI-compatible API was asked for a model that is no strategy or agent here."""

    code = "model.not_found"


class PluginLoadFailed(PluginError):
    code = "plugin.load_failed"


class DuplicatePlugin(PluginError):
    code = "plugin.duplicate"


class LLMError(ReasonLoopError):
    """A provider call failed. ``status_code`` is set when an HTTP status was seen."""

    code = "llm.error"

    def __init__(self, message: str, *, status_code: int | None = None, **details: Any) -> None:
        super().__init__(message, status_code=status_code, **details)
        self.status_code = status_code


class LLMNotConfigured(LLMError):
    code = "llm.not_configured"


class LLMAuthError(LLMError):
    code = "llm.auth"


class LLMRateLimited(LLMError):
    code = "llm.rate_limited"
    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **details: Any) -> None:
        super().__init__(message, retry_after=retry_after, **details)
        self.retry_after = retry_after


class LLMUnreachable(LLMError):
    code = "llm.unreachable"
    retryable = True


class LLMTimeout(LLMError):
    code = "llm.timeout"
    retryable = True


class LLMServerError(LLMError):
    code = "llm.server_error"
    retryable = True


class LLMBadRequest(LLMError):
    code = "llm.bad_request"


class LLMToolSchemaRejected(LLMBadRequest):
    code = "llm.tool_schema_rejected"


class LLMNotSupported(LLMError):
    """The provider cannot do what was asked (for example score continuations)."""

    code = "llm.not_supported"


class LLMBadResponse(LLMError):
    """The provider answered with something we cannot parse (malformed chunk, cut stream)."""

    code = "llm.bad_response"


class ToolError(ReasonLoopError):
    code = "tool.error"


class ToolNotFound(ToolError):
    code = "tool.not_found"


class ToolArgumentsInvalid(ToolError):
    code = "tool.invalid_arguments"


class ToolTimeout(ToolError):
    code = "tool.timeout"


class ToolBlocked(ToolError):
    """A policy refused the call: a private address, a method not allowed, a host not allowed."""

    code = "tool.blocked"


class ToolRejected(ToolBlocked):
    """The person asked to approve the call rejected it (or nobody answered in time)."""

    code = "tool.rejected"


class ToolNetworkError(ToolError):
    """The tool could not reach the service it talks to (DNS, connection, bad response)."""

    code = "tool.network"


class ToolUnavailable(ToolError):
    """The tool's backend is not running (an MCP server that failed to start or died)."""

    code = "tool.unavailable"


class KBError(ReasonLoopError):
    code = "kb.error"


class KBEmpty(KBError):
    """A search of a knowledge base that holds no documents yet."""

    code = "kb.empty"


class KBModelMismatch(KBError):
    code = "kb.model_mismatch"


class KBLoadError(KBError):
    code = "kb.load_error"


class RunError(ReasonLoopError):
    code = "run.error"


class RunNotFound(RunError):
    code = "run.not_found"


class GuardTripped(RunError):
    code = "agent.guard.tool_call_required"


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


class RequestInvalid(ReasonLoopError):
    """A request names an unknown plugin or carries invalid settings; ``field`` names the culprit."""

    code = "request.invalid"


class ApprovalInvalid(RequestInvalid):
    """An answer to an approval that cannot be taken (modified arguments that do not fit the tool's
    schema, a decision that is not one); the approval stays pending."""

    code = "approval.invalid"


class RequestNotFound(RequestInvalid):
    """A request for a path the server does not serve."""

    code = "request.not_found"


class MethodNotAllowed(RequestInvalid):
    """A request with a method its path does not take (``GET`` on a ``POST`` route)."""

    code = "request.method_not_allowed"


class AuthError(ReasonLoopError):
    """Missing or unknown API key."""

    code = "auth.invalid_key"


class CrossSiteRefused(AuthError):
    """A web page of another site called a server whose authentication is off."""

    code = "auth.cross_site"


class RateLimited(ReasonLoopError):
    """An API key made more requests than its limit allows; ``retry_after`` is in seconds."""

    code = "auth.rate_limited"
    retryable = True


class ConversationNotFound(RunError):
    code = "conversation.not_found"


class ConversationBusy(RunError):
    """A run of the conversation is still in flight: the next question waits for its answer."""

    code = "conversation.busy"


class KBUnavailable(KBError):
    """The knowledge-base module or its backend is not available."""

    code = "kb.unavailable"


class DocumentNotFound(KBError):
    code = "kb.document_not_found"


class UploadTooLarge(KBError):
    """An uploaded file is over the server's size limit."""

    code = "kb.upload_too_large"


class ToolBudgetExhausted(ToolError):
    """A tool call was not executed because the run's tool-call budget is spent."""

    code = "tool.budget_exhausted"


class PlanStepFailed(RunError):
    """A plan step could not run: unknown tool, bad reference, dependency cycle, failed input or timeout."""

    code = "agent.plan_step_failed"


class FormatNotFollowed(RunError):
    """The model's replies could not be read in the strategy's format (ReAct text, tool calls, a
    ReWOO plan), so the run ended instead of guessing; ``details`` name the strategy, the model,
    the last problem and ``suggestion``, a strategy the model can run."""

    code = "agent.format_not_followed"


class AgentConfigError(ConfigError):
    """A declared agent is invalid: an unknown tool, agent or MCP server, or a cycle of sub-agents.

    ``details`` carry ``agent`` (the agent whose declaration is wrong) and ``reference``.
    """

    code = "agent.config_invalid"


class AgentDepthExceeded(ToolBlocked):
    """A sub-agent call was refused: it would nest agents deeper than the configured limit."""

    code = "agent.depth_exceeded"


class AgentRecursion(ToolBlocked):
    """A sub-agent call was refused: the agent is already running higher up the same stack."""

    code = "agent.recursion"


class SubAgentFailed(ToolError):
    """A sub-agent's run ended in an error; ``details`` carry the sub-run's ``cause`` code."""

    code = "agent.sub_agent_failed"


class EvalDataError(ReasonLoopError):
    """An evaluation set cannot be read: ``details`` carry ``file``, ``line`` (1-based, when known) and ``field``."""

    code = "eval.bad_data"
