"""Errors with stable string codes.

Every failure reasonloop reports carries a ``code`` that scripts, HTTP clients and
tests can match on; the message is for people and may change. The tree::

    ReasonLoopError                      reasonloop.error
    ├── ConfigError                      config.invalid
    │   ├── AgentConfigError             agent.config_invalid  (a declared agent's bad reference)
    │   └── ModeInvalid                  mode.invalid          (unknown mode, mode with a strategy, strategy missing)
    ├── PluginError                      plugin.error
    │   ├── PluginNotFound               plugin.not_found
    │   │   └── ModelNotFound            model.not_found       (the OpenAI-compatible API's unknown model)
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
    │   ├── KBEmpty                      kb.empty              (a search of a base that holds no documents)
    │   ├── KBModelMismatch              kb.model_mismatch
    │   ├── KBLoadError                  kb.load_error
    │   ├── KBUnavailable                kb.unavailable
    │   ├── DocumentNotFound             kb.document_not_found
    │   └── UploadTooLarge               kb.upload_too_large
    ├── RunError                         run.error
    │   ├── RunNotFound                  run.not_found
    │   ├── GuardTripped                 agent.guard.tool_call_required
    │   ├── ConversationNotFound         conversation.not_found
    │   ├── ConversationBusy             conversation.busy     (a run of the conversation is in flight)
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
    │   └── CrossSiteRefused             auth.cross_site       (a page of another site, auth off)
    └── RateLimited                      auth.rate_limited     (retryable)

Codes are class attributes, so ``except LLMError`` catches every provider failure and
``err.code`` says which one.

Each branch is defined in a module of its own in this package (the root in ``base``; the
configuration, plugin and evaluation-data errors in ``setup``; then ``llm``, ``tools``, ``kb``,
``runs`` and ``requests``); import them from here.
"""

from __future__ import annotations

from reasonloop.errors.base import ReasonLoopError
from reasonloop.errors.kb import (
    DocumentNotFound,
    KBEmpty,
    KBError,
    KBLoadError,
    KBModelMismatch,
    KBUnavailable,
    UploadTooLarge,
)
from reasonloop.errors.llm import (
    LLMAuthError,
    LLMBadRequest,
    LLMBadResponse,
    LLMError,
    LLMNotConfigured,
    LLMNotSupported,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    LLMToolSchemaRejected,
    LLMUnreachable,
)
from reasonloop.errors.requests import (
    ApprovalInvalid,
    AuthError,
    CrossSiteRefused,
    MethodNotAllowed,
    RateLimited,
    RequestInvalid,
    RequestNotFound,
)
from reasonloop.errors.runs import (
    ApprovalAnswered,
    ApprovalNotFound,
    ConversationBusy,
    ConversationNotFound,
    FormatNotFollowed,
    GuardTripped,
    PlanStepFailed,
    RunError,
    RunFinished,
    RunNotFound,
    RunQueueFull,
    RunStoreUnavailable,
)
from reasonloop.errors.setup import (
    AgentConfigError,
    ConfigError,
    DuplicatePlugin,
    EvalDataError,
    ModeInvalid,
    ModelNotFound,
    PluginError,
    PluginLoadFailed,
    PluginNotFound,
)
from reasonloop.errors.tools import (
    AgentDepthExceeded,
    AgentRecursion,
    SubAgentFailed,
    ToolArgumentsInvalid,
    ToolBlocked,
    ToolBudgetExhausted,
    ToolError,
    ToolNetworkError,
    ToolNotFound,
    ToolRejected,
    ToolTimeout,
    ToolUnavailable,
)

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
