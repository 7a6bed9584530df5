"""Serve one of the peer apps under waitress, as serve.py serves usersvc:

    python bench/serve_peer.py fixed PORT BODY_BYTES [STATUS [HEADERS_JSON]]
    python bench/serve_peer.py falcon PORT
    python bench/serve_peer.py fastapi PORT          (FastAPI on uvicorn; its packages)
    python bench/serve_peer.py sqlmodel PORT FILE    (FastAPI + SQLModel on a SQLite FILE)
    python bench/serve_peer.py falcon-granian PORT   (Falcon under granian)

HEADERS_JSON, a list of [name, value] pairs, adds those headers to the
fixed answer (the ones usersvc's answer carries, to tell what the headers
cost waitress from what usersvc's code costs).

Prints "ready" when it listens.
"""
from __future__ import annotations

import json
import sys

import waitress
from peers import PeerStore, falcon_app, fixed_app

kind, port = sys.argv[1], int(sys.argv[2])
if kind == "fixed":
    size = int(sys.argv[3])
    status = sys.argv[4] if len(sys.argv) > 4 else "200 OK"
    extra = [tuple(h) for h in json.loads(sys.argv[5])] if len(sys.argv) > 5 else []
    app = fixed_app(b"x" * size, status.replace("_", " "), extra)
elif kind in ("fastapi", "sqlmodel"):  # on uvicorn (uvloop, httptools), as FastAPI's docs run it
    import asyncio
    import os

    import uvicorn
    if kind == "sqlmodel":
        os.environ["PEER_SQLITE"] = sys.argv[3]
        from sqlmodel_peer import app as fastapi_app
    else:
        from fastapi_peer import app as fastapi_app
    config = uvicorn.Config(fastapi_app, host="127.0.0.1", port=port,
                            log_level="warning", access_log=False)
    server = uvicorn.Server(config)

    async def serve() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        print("ready", flush=True)
        await task
    asyncio.run(serve())
    sys.exit(0)
elif kind == "falcon-granian":   # one worker, 4 blocking threads, as usersvc under granian
    from granian import Granian
    from granian.constants import Interfaces
    server = Granian("peers:falcon_factory", factory=True, interface=Interfaces.WSGI,
                     address="127.0.0.1", port=port, workers=1, blocking_threads=4,
                     websockets=False, log_enabled=False)
    server.on_startup(lambda: print("ready", flush=True))
    server.serve()
    sys.exit(0)
else:
    app = falcon_app(PeerStore(1000))
server = waitress.create_server(app, host="127.0.0.1", port=port, threads=4, ident="peer")
print("ready", flush=True)
server.run()
