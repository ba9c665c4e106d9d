"""Reasoning strategies: several ways to answer, behind one contract and one event stream.

Built-ins (ids): ``qa`` (retrieve then answer), ``decompose`` (sub-questions answered
concurrently), ``react`` (Thought/Action/Observation text loop), ``toolcall`` (native tool
calls) and ``rewoo`` (plan once, parallel work, solve). Third-party strategies subclass
:class:`Reasoning` and register under the entry-point group ``reasonloop.reasoning``.
Strategy modules are imported on demand, by id.
"""

from reasonloop.reasoning.base import Budget, LoopSettings, Reasoning, ReasoningSettings, RunContext

__all__ = ["Budget", "LoopSettings", "Reasoning", "ReasoningSettings", "RunContext"]
