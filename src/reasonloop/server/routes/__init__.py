"""The HTTP API's routes, one module per resource: runs (and their event streams), the plugin
catalogs, the knowledge base, documents and their pages, conversations and feedback, the
OpenAI-compatible endpoint, health. Each is an ``APIRouter`` that the app includes; every ``/v1``
route asks the gate for its caller (:func:`reasonloop.server.deps.principal`)."""
