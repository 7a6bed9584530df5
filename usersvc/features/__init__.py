"""The features: each a module (or a folder) that plugs into the core at
the points ``App`` offers (``plug(app)``), put in by ``usersvc.build_app``
when the settings ask: CORS, bearer tokens, idempotency keys, batches, the
HTML pages, OpenAPI, ``/healthz``, metrics, a path prefix. The core never
imports them (docs/architecture.md, "The core, and what plugs into it")."""
