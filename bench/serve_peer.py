"""Serve one of the peer apps under waitress, as serve.py serves usersvc:

    python bench/serve_peer.py fixed PORT BODY_BYTES [STATUS]
    python bench/serve_peer.py falcon PORT

Prints "ready" when it listens.
"""
from __future__ import annotations

import sys

import waitress
from peers import PeerStore, falcon_app, fixed_app

kind, port = sys.argv[1], int(sys.argv[2])
if kind == "fixed":
    size = int(sys.argv[3])
    status = sys.argv[4] if len(sys.argv) > 4 else "200 OK"
    app = fixed_app(b"x" * size, status.replace("_", " "))
else:
    app = falcon_app(PeerStore(1000))
server = waitress.create_server(app, host="127.0.0.1", port=port, threads=4, ident="peer")
print("ready", flush=True)
server.run()
