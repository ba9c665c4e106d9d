"""reasonloop as an MCP server: the tools (:mod:`.server`), how ``ask`` follows its run
(:mod:`.follow`) and asks its client about approvals (:mod:`.approvals`), what the tools' arguments
may reach (:mod:`.inputs`), and the endpoint that serves them over streamable HTTP at ``/mcp`` of
``reasonloop serve`` (:mod:`.endpoint`); over stdio, :mod:`reasonloop.server.mcp_stdio` opens the
app's services beside them. Nothing here is imported until MCP is served: the ``mcp`` SDK loads
with it."""
