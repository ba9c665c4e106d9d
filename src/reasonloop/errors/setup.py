"""Errors in what was set up before anything runs: the configuration, a declared agent or a mode,
the plugins it names, an evaluation set's file. Re-exported by :mod:`reasonloop.errors`."""

from __future__ import annotations

from reasonloop.errors.base import ReasonLoopError

__all__ = [
    "AgentConfigError",
    "ConfigError",
    "DuplicatePlugin",
    "EvalDataError",
    "ModeInvalid",
    "ModelNotFound",
    "PluginError",
    "PluginLoadFailed",
    "PluginNotFound",
]


class ConfigError(ReasonLoopError):
    code = "config.invalid"


class ModeInvalid(ConfigError):
    """An unknown thinking mode, a mode given with a strategy, or a mode whose strategy is not installed."""

    code = "mode.invalid"


class AgentConfigError(ConfigError):
    """A declared agent is invalid: an unknown tool, agent or MCP server, or a cycle of sub-agents.

    ``details`` carry ``agent`` (the agent whose declaration is wrong) and ``reference``.
    """

    code = "agent.config_invalid"


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


class EvalDataError(ReasonLoopError):
    """An evaluation set cannot be read: ``details`` carry ``file``, ``line`` (1-based, when known) and ``field``."""

    code = "eval.bad_data"
