"""Write the OpenAPI document usersvc serves, in open and in token mode, and
with the tasks of examples/tasks.py (every kind of field), to files (for
the linters in tools/lint-openapi.sh):

    .venv/bin/python tools/openapi_documents.py OUT_DIR

Each is what ``GET /openapi.json`` answers, asked through the app.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from webob import Request

from usersvc import USER, make_app

TOKEN = "r" * 20        # a read token, for token mode


def main(out: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    from tasks import TASKS        # every kind of field: examples/tasks.py
    for mode, tokens, collections in (("open", None, None), ("tokens", {TOKEN: "read"}, None),
                                      ("tasks", None, (USER, TASKS))):
        app = make_app("memory://", tokens=tokens, collections=collections)
        request = Request.blank("/openapi.json")
        if tokens:
            request.headers["Authorization"] = f"Bearer {TOKEN}"
        response = request.get_response(app)
        assert response.status_code == 200, response.text
        (out / f"openapi-{mode}.json").write_text(json.dumps(response.json, indent=1))
        app.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
