"""What strategies are made of: :mod:`.llmcall` (one model turn), :mod:`.toolexec` (one round
of tool calls), :mod:`.retrieval` with :mod:`.retrieval_settings` and :mod:`.query_transforms`
(searching the knowledge sources outside a tool), :mod:`.intent` (messages that need no
search), :mod:`.budget` (counting a run against its limits), :mod:`.finish` (how a run ends)
with :mod:`.citations` (markers mapped to the sentence they rest on), and what those read:
:mod:`.terms` (what a question is about) and :mod:`.sentences` (passages' sentences with their
page offsets).
"""
