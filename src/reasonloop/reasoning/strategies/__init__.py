"""The built-in strategies, one module each: :mod:`.qa` (retrieve, then one answer),
:mod:`.decompose` (sub-questions answered concurrently, then one synthesis), :mod:`.react`
(Thought/Action/Observation in plain text), :mod:`.toolcall` (native tool calls)
:mod:`.rewoo` (plan once, work in parallel, solve) and :mod:`.ircot` (one reasoning sentence, one
search, until the answer). Each is imported when its id is first used.
"""
