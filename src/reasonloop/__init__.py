"""reasonloop: answer questions over your own documents with pluggable reasoning."""

from reasonloop.events import (
    Answer,
    AnswerDelta,
    Citation,
    ErrorEvent,
    Event,
    Progress,
    RunResult,
    RunStarted,
    Step,
    Thought,
    ToolCall,
    ToolResult,
    Usage,
)

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # Agent and KnowledgeBase pull in the model and index stacks: import them on first use so
    # `import reasonloop` (and the CLI's start-up) stays cheap.
    if name == "Agent":
        from reasonloop.agents.agent import Agent

        return Agent
    if name == "KnowledgeBase":
        from reasonloop.kb.knowledge_base import KnowledgeBase

        return KnowledgeBase
    raise AttributeError(f"module 'reasonloop' has no attribute {name!r}")


__all__ = [
    "Agent",
    "Answer",
    "AnswerDelta",
    "Citation",
    "ErrorEvent",
    "Event",
    "KnowledgeBase",
    "Progress",
    "RunResult",
    "RunStarted",
    "Step",
    "Thought",
    "ToolCall",
    "ToolResult",
    "Usage",
    "__version__",
]
