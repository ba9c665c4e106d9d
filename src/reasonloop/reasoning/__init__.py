"""Reasoning strategies: several ways to answer, behind one contract and one event stream.

Built-ins (ids): ``qa`` (retrieve then answer), ``decompose`` (sub-questions answered
concurrently), ``react`` (Thought/Action/Observation text loop), ``toolcall`` (native tool
calls) and ``rewoo`` (plan once, parallel work, solve). Third-party strategies subclass
:class:`Reasoning` and register under the entry-point group ``reasonloop.reasoning``.
Strategy modules are imported on demand, by id.

The rooms, each importing only those below it: :mod:`.strategies` (the strategies themselves),
:mod:`.evidence_answer` (what a base model runs instead), :mod:`.steps` (what strategies are made
of: tool rounds, model turns, retrieval, budgets, the end of a run) and :mod:`.formats` (the text
models read and write: prompts, ReAct text, plans, calls written as text). :mod:`.base` is the
contract they all share.
"""

from reasonloop.reasoning.base import Budget, LoopSettings, Reasoning, ReasoningSettings, RunContext

__all__ = ["Budget", "LoopSettings", "Reasoning", "ReasoningSettings", "RunContext"]
