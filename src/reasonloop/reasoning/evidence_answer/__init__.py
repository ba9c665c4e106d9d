"""Answering from evidence, the way a base model (one that continues text) can be trusted to.

The room: :mod:`.answer` (the entry point: retrieve, check, answer), :mod:`.check` (whether the
passages can answer at all), :mod:`.form` (the form the answer takes), :mod:`.span` (a verbatim
short span), :mod:`.decision` (yes/no and either/or by calibrated likelihoods), :mod:`.texts`
(what the answer says) and :mod:`.strategy` (the strategy the agent runs for a base model). What
a question is about and the passages' sentences are steps every strategy's citations use too
(:mod:`reasonloop.reasoning.steps.terms`, :mod:`reasonloop.reasoning.steps.sentences`).
"""
