"""The FastAPI peer: users as FastAPI's tutorial writes them, pydantic
models for what comes in and goes out (a name of 1 to 200 characters,
trimmed; an ``EmailStr``), ``async def`` path operations, 201 with
``Location``, 409 for a taken e-mail, over the peers' store of 1,000 users.
Served on uvicorn (uvloop, httptools) by ``serve_peer.py fastapi PORT``.

Needs what usersvc does not: ``.venv/bin/pip install fastapi 'uvicorn[standard]'
email-validator`` (no ``from __future__ import annotations`` here: FastAPI
reads the annotations).
"""
from typing import Annotated

from fastapi import FastAPI, HTTPException, Query, Response
from peers import PeerStore
from pydantic import BaseModel, ConfigDict, EmailStr, Field

store = PeerStore(1000)
app = FastAPI()


class UserIn(BaseModel):
    model_config = ConfigDict(str_strip_whitespace=True)
    name: Annotated[str, Field(min_length=1, max_length=200)]
    email: EmailStr


class User(UserIn):
    id: int


@app.get("/users/{user_id}", response_model=User)
async def read_user(user_id: int):
    user = store.get(user_id)
    if user is None:
        raise HTTPException(status_code=404)
    return user


@app.get("/users", response_model=list[User])
async def read_users(after: int = 0, limit: Annotated[int, Query(ge=1, le=1000)] = 100):
    return store.page(after, limit)


@app.post("/users", response_model=User, status_code=201)
async def create_user(user: UserIn, response: Response):
    made = store.create(user.name, user.email)
    if made is None:
        raise HTTPException(status_code=409, detail="e-mail taken")
    response.headers["Location"] = f"/users/{made['id']}"
    return made


@app.put("/users/{user_id}", response_model=User)
async def replace_user(user_id: int, user: UserIn):
    made = store.replace(user_id, user.name, user.email)
    if made is None:
        raise HTTPException(status_code=404)
    return made


# -- tasks, the fields and rules of examples/tasks.py -----------------------------

import datetime as dt  # noqa: E402
import threading  # noqa: E402
from typing import Literal  # noqa: E402

from fastapi import status  # noqa: E402
from pydantic import AwareDatetime, HttpUrl  # noqa: E402


class TaskIn(BaseModel):
    model_config = ConfigDict(str_strip_whitespace=True, extra="forbid")
    title: Annotated[str, Field(min_length=1, max_length=200)]
    done: bool
    estimate: Annotated[float, Field(ge=0, le=1000)] | None = None
    due: dt.date | None = None
    remind_at: AwareDatetime | None = None
    priority: Literal["low", "normal", "high"]
    link: Annotated[HttpUrl, Field(max_length=2048)] | None = None
    owner: Annotated[int, Field(gt=0)] | None = None


class Task(TaskIn):
    id: int
    created: dt.datetime
    updated: dt.datetime


tasks: dict[int, dict] = {}
tasks_lock = threading.Lock()


@app.post("/tasks", response_model=Task, status_code=status.HTTP_201_CREATED,
          response_model_exclude_none=True)
async def create_task(task: TaskIn, response: Response):
    with tasks_lock:        # the owner looked for and the task made in one step
        if task.owner is not None and store.get(task.owner) is None:
            raise HTTPException(status_code=422, detail="owner: no such user")
        now = dt.datetime.now(dt.timezone.utc)
        made = {**task.model_dump(), "id": len(tasks) + 1, "created": now, "updated": now}
        tasks[made["id"]] = made
    response.headers["Location"] = f"/tasks/{made['id']}"
    return made
