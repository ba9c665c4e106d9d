"""The text models read and write: :mod:`.prompts` (templates per :mod:`.language`),
:mod:`.react_parser` (ReAct text) with :mod:`.answer_spotter` (its answer, as it streams),
:mod:`.text_calls` and :mod:`.toolcall_text` (tool calls written as text),
:mod:`.planned_call` (the one shape every tool call is read into), :mod:`.rewoo_plan` (ReWOO
plans and the order their steps run in), :mod:`.ircot_step` (IRCoT's next sentence or its answer) and :mod:`.format_watch` (a model that follows no format).
Nothing here calls a model or a tool itself.
"""
