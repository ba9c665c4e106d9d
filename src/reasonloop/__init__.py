"""reasonloop: answer questions over your own documents with pluggable reasoning."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from reasonloop import _moved

_moved.install()

if TYPE_CHECKING:
    from reasonloop.agents.agent import Agent
    from reasonloop.events import (
        Answer,
        AnswerDelta,
        Citation,
        ErrorEvent,
        Event,
        Plan,
        PlannedStep,
        Progress,
        RunResult,
        RunStarted,
        Searched,
        Step,
        Thought,
        ToolCall,
        ToolResult,
        Usage,
    )
    from reasonloop.kb.knowledge_base import KnowledgeBase

__version__ = "0.1.0"

# Every public name is imported on first use: the events pull in pydantic, Agent and
# KnowledgeBase the model and index stacks, and `import reasonloop` (which every command
# line start and every plugin import pays) needs none of them.
_LAZY = {
    "Agent": "reasonloop.agents.agent",
    "KnowledgeBase": "reasonloop.kb.knowledge_base",
    **dict.fromkeys(
        (
            "Answer",
            "AnswerDelta",
            "Citation",
            "ErrorEvent",
            "Event",
            "Plan",
            "PlannedStep",
            "Progress",
            "RunResult",
            "RunStarted",
            "Searched",
            "Step",
            "Thought",
            "ToolCall",
            "ToolResult",
            "Usage",
        ),
        "reasonloop.events",
    ),
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reasonloop' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Agent",
    "Answer",
    "AnswerDelta",
    "Citation",
    "ErrorEvent",
    "Event",
    "KnowledgeBase",
    "Plan",
    "PlannedStep",
    "Progress",
    "RunResult",
    "RunStarted",
    "Searched",
    "Step",
    "Thought",
    "ToolCall",
    "ToolResult",
    "Usage",
    "__version__",
]
