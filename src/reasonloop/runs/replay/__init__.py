"""Replay: a run that resumes after its process died does not do again what it had finished.

While a run executes, every model call and tool call it finishes is recorded in its step journal
(:class:`StepJournal`, kept in the run store). When another process resumes the run
(:mod:`reasonloop.runs.resume`), the run is driven again from its request with the journal
around its models and tools (:func:`reasonloop.runs.replay.context.journaled`, which the runner
applies: the run manager itself never loads the models' and tools' layers): the calls it had
finished are answered from the journal, in any order, and the first one it had not finished is
made for real.

The replay finds the same calls when the strategy asks the same things again, which it does
when its inputs are the same (the request, the knowledge base, the recorded replies). Where they
differ (a document added meanwhile), the calls that differ are made for real: a resumed run may
redo work, never give a wrong reply to a call.
"""

from reasonloop.runs.replay.steps import REQUEST_KEY, StepJournal

__all__ = ["REQUEST_KEY", "StepJournal"]
