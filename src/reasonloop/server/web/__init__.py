"""Pages for people, served from inside the package: the web UI (:mod:`.ui`, its files under
``static/``) and the API's interactive docs (:mod:`.api_docs`)."""
