"""Write the OpenAPI document usersvc serves, in open and in token mode,
with the tasks of examples/tasks.py (every kind of field), and with the
webhooks feature plugged (its paths and OpenAPI 3.1's ``webhooks``
object), to files (for the linters in tools/lint-openapi.sh):

    .venv/bin/python tools/openapi_documents.py OUT_DIR

Each is what ``GET /openapi.json`` answers, asked through the app.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from webob import Request

from usersvc import DEFAULT_FEATURES, USER, make_app

TOKEN = "r" * 20        # a read token, for token mode


def main(out: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    from tasks import TASKS        # every kind of field: examples/tasks.py
    default, webhooks = DEFAULT_FEATURES, (*DEFAULT_FEATURES, "webhooks")
    for mode, tokens, collections, features in (
            ("open", None, None, default), ("tokens", {TOKEN: "read"}, None, default),
            ("tasks", None, (USER, TASKS), default), ("webhooks", None, None, webhooks)):
        app = make_app("memory://", tokens=tokens, collections=collections, features=features)
        request = Request.blank("/openapi.json")
        if tokens:
            request.headers["Authorization"] = f"Bearer {TOKEN}"
        response = request.get_response(app)
        assert response.status_code == 200, response.text
        (out / f"openapi-{mode}.json").write_text(json.dumps(response.json, indent=1))
        app.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
