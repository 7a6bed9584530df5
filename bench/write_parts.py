"""Where a POST's instructions go: a user's and a task's (every field,
naming its owner) on the memory store of 1,000 of each, split into the
steps docs/architecture.md's walk names, each counted alone by valgrind's
callgrind as ``instructions.py`` counts a request (``MANY - FEW`` calls
of the step, over ``MANY - FEW``).

    .venv/bin/python bench/write_parts.py

Steps: the whole request (``App.__call__``); making the ``Request``;
``read_document`` (the body to a document); the schema's ``for_create``
(each field checked); the store's ``create`` (for a task, behind
``Checked``: its owner looked for and its timestamps set, in an atomic
step); of that, ``Indexes.move`` from nothing (a new record's index
entries) alone; ``answer`` (the record's encoding, its ETag, the
response); and the ``Response`` handed to the server. What is left of the whole is the app's
own (its checks of the host and the origin, routing, the body's bounds,
negotiation, the Location). Each step is given what the request gives it,
made before the count. Needs valgrind; about four minutes on 2 cores.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from instructions import FEW, MANY  # noqa: E402
from paired import CHILD_HELPERS, ROOT  # noqa: E402

STEPS = ("the whole request", "Request", "read_document", "for_create", "create",
         "Indexes.move", "answer", "Response")

CHILD = CHILD_HELPERS + r"""
import json, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/examples")
from tasks import TASKS
from usersvc import USER, make_app
from usersvc.representation import JSON, read_document
from usersvc.request import Request, Response
from usersvc.resources import answer
from usersvc.storage import open_store
collection, step, count, made = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
TASK = {"title": "Write the notes", "done": False, "estimate": 2.5, "due": "2026-12-01",
        "remind_at": "2026-11-30T09:00:00+01:00", "priority": "high",
        "link": "https://example.org/notes", "owner": 7}
store = open_store("memory://", (USER, TASKS))
for i in range(1, 1001):
    store["users"].create(name=f"User {i}", email=f"user{i}@example.org")
for i in range(1, 1001):
    store["tasks"].create(**{**TASK, "title": f"Task {i}"})
app = make_app(store)
schema, records = (USER, store["users"]) if collection == "users" else (TASKS, store["tasks"])
resource = app.router.match("/" + schema.plural)[0].target
docs = [{"name": f"New {i}", "email": f"new{i}@example.org"} if collection == "users"
        else {**TASK, "title": f"New {i}"} for i in range(made)]
bodies = [json.dumps(doc).encode() for doc in docs]
envs = [environ("POST", "/" + schema.plural, body) for body in bodies]
if step == "the whole request":
    calls = [lambda env=env: b"".join(app(env, _ok)) for env in envs]
elif step == "Request":
    calls = [lambda env=env: Request(env) for env in envs]
elif step == "read_document":
    reqs = [Request(env) for env in envs]
    for req, body in zip(reqs, bodies):
        req.body = body
    calls = [lambda req=req: read_document(req, schema) for req in reqs]
elif step == "for_create":
    calls = [lambda doc=doc: schema.for_create(doc) for doc in docs]
elif step == "create":
    fields = [schema.for_create(doc) for doc in docs]
    calls = [lambda f=f: records.create(**f) for f in fields]
elif step == "Indexes.move":
    made_ones = [records.create(**schema.for_create(doc)) for doc in docs]
    indexes = store.collections[schema.plural].contents.indexes
    new = [r._replace(id=r.id + 10_000_000) for r in made_ones]    # entries of records not there
    calls = [lambda r=r: indexes.move(None, r) for r in new]
elif step == "answer":
    made_ones = [records.create(**schema.for_create(doc)) for doc in docs]
    reqs = [Request(env) for env in envs]
    calls = [lambda req=req, r=r: answer(req, 201, resource, r, JSON, ("Location", "http://h/x/1"))
             for req, r in zip(reqs, made_ones)]
elif step == "Response":
    responses = [Response(201, b"{}", [("Content-Type", "application/json"), ("ETag", '"1-1"')])
                 for _ in envs]
    calls = [lambda r=r, env=env: r(env, _ok) for r, env in zip(responses, envs)]
gc.collect()
for call in calls[:count]:
    call()
"""


def instructions(collection: str, step: str, count: int) -> int:
    run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          sys.executable, "-c", CHILD, str(ROOT), collection, step,
                          str(count), str(MANY)],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "0"})
    return int(re.search(r"Collected : (\d+)", run.stderr).group(1))


def per_call(collection: str, step: str) -> float:
    many, few = instructions(collection, step, MANY), instructions(collection, step, FEW)
    return (many - few) / (MANY - FEW)


def main() -> int:
    asked = [(c, s) for c in ("users", "tasks") for s in STEPS]
    with ThreadPoolExecutor(os.cpu_count()) as pool:    # counts, not times: runs side by side
        figures = dict(zip(asked, pool.map(lambda a: per_call(*a), asked), strict=True))
    print("| instructions | a user's POST | share | a task's POST | share |")
    print("|---|---:|---:|---:|---:|")
    for step in (*STEPS, "the app's own (the rest)"):
        row = []
        for c in ("users", "tasks"):
            whole = figures[c, "the whole request"]
            if step == "the app's own (the rest)":
                value = whole - sum(figures[c, s] for s in STEPS[1:] if s != "Indexes.move")
            else:
                value = figures[c, step]
            row += [f"{value:,.0f}", f"{value / whole:.0%}"]
        label = "of which `Indexes.move` from nothing" if step == "Indexes.move" else step
        print(f"| {label} | " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
