"""The built-in strategies, one module each: :mod:`.qa` (retrieve, then one answer),
:mod:`.decompose` (sub-questions answered concurrently, then one synthesis), :mod:`.react`
(Thought/Action/Observation in plain text), :mod:`.toolcall` (native tool calls),
:mod:`.rewoo` (plan once, work in parallel, solve), :mod:`.ircot` (one reasoning sentence, one
search, until the answer) and :mod:`.auto` (decides which of them a question needs, then runs it);
and one package, :mod:`.research` (research questions by parallel sub-agents, judged, then a cited
report), whose parts are modules of their own. Each is imported when its id is first used.
"""
