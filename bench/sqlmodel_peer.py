"""The FastAPI + SQLModel peer: users in a SQLite file, as SQLModel's
tutorial writes them (a ``table=True`` model, one engine, a session per
request through a dependency), the file in WAL mode with
``synchronous=NORMAL`` (set on each connection, as SQLAlchemy's docs show
for pragmas), a unique e-mail (409). Served on uvicorn by
``serve_peer.py sqlmodel PORT FILE``.

Needs what usersvc does not: ``.venv/bin/pip install fastapi sqlmodel
'uvicorn[standard]' email-validator`` (no ``from __future__ import
annotations`` here: FastAPI and SQLModel read the annotations).
"""
import os
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Query, Response
from pydantic import EmailStr
from sqlalchemy import event
from sqlalchemy.exc import IntegrityError
from sqlmodel import Field, Session, SQLModel, create_engine, select


class UserBase(SQLModel):
    name: str = Field(min_length=1, max_length=200)
    email: EmailStr = Field(unique=True, index=True)


class User(UserBase, table=True):
    id: int | None = Field(default=None, primary_key=True)


class UserCreate(UserBase):
    pass


class UserPublic(UserBase):
    id: int


engine = create_engine(f"sqlite:///{os.environ.get('PEER_SQLITE', 'peer.db')}",
                       connect_args={"check_same_thread": False})


@event.listens_for(engine, "connect")
def _pragmas(dbapi_connection, connection_record):
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


SQLModel.metadata.create_all(engine)
with Session(engine) as session:
    if session.exec(select(User).limit(1)).first() is None:
        session.add_all(User(name=f"User {i}", email=f"user{i}@example.org") for i in range(1000))
        session.commit()


def get_session():
    with Session(engine) as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]
app = FastAPI()


@app.get("/users/{user_id}", response_model=UserPublic)
def read_user(user_id: int, session: SessionDep):
    user = session.get(User, user_id)
    if user is None:
        raise HTTPException(status_code=404)
    return user


@app.get("/users", response_model=list[UserPublic])
def read_users(session: SessionDep, after: int = 0,
               limit: Annotated[int, Query(ge=1, le=1000)] = 100):
    return session.exec(select(User).where(User.id > after).order_by(User.id).limit(limit)).all()


@app.post("/users", response_model=UserPublic, status_code=201)
def create_user(user: UserCreate, session: SessionDep, response: Response):
    made = User.model_validate(user)
    session.add(made)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise HTTPException(status_code=409, detail="e-mail taken") from None
    session.refresh(made)
    response.headers["Location"] = f"/users/{made.id}"
    return made
