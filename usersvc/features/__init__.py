"""The features: each a module (or a folder) whose ``FEATURE`` plugs into
the core through the hooks ``usersvc.hooks`` lists (``plug(app, storage,
plugged)``), put in by ``usersvc.build_app`` as ``features=`` names them:
the HTML pages, OpenAPI, ``/healthz``, CORS, bearer tokens, idempotency
keys, batches, metrics. (``Mount``, a path prefix around an app, is no
feature: ``usersvc.serving.mount``.) The core never imports them
(docs/architecture.md, "The core, and what plugs into it")."""
