"""How bytes reach sockets, fast: the server's own WebSocket protocol, the outbox, the serving
process's limits and the path that serves ``/v1/ws`` outside the middleware stack.

Why: see benchmarks/README.md, "Design notes: WebSocket transport" and "Serving process settings".
The application (routes, the WebSocket session) never imports this package; the composition
root (:mod:`reasonloop.server.app`) and the serving entry points wire it in, and the two sides
share only the contract in :mod:`reasonloop.server.ws.frames`.
"""
