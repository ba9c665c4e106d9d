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

__all__ = [
    "Answer",
    "AnswerDelta",
    "Citation",
    "ErrorEvent",
    "Event",
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
