"""Every store against the memory store, for schemas hypothesis makes: random
fields (text and integer, some optional, some unique), random filters,
sorts and searches, and random writes and reads. Each call must give each
store the same answer (the same records, or the same error), ids compared
through the order they were created in (PostgreSQL spends an id on an
insert that a unique field refuses; memory and SQLite do not)."""
from __future__ import annotations

import tempfile
import uuid
from contextlib import contextmanager

import pytest
from conftest import POSTGRES_REQUIRED, POSTGRES_URL, with_search_path
from hypothesis import HealthCheck, given, settings, strategies as st

from usersvc import Schema, integer, text
from usersvc.schema import Invalid
from usersvc.storage import Precondition, StoreError, open_store
from usersvc.storage.stored import declaration

NAMES = ["alpha", "beta", "gamma", "delta"]
TEXTS = ["a", "A", "b c", "B-C", "ß", "SS", "ss x", "Zoë", "zo"]

STORES = ["sqlite://", "sqlite-file"] + (["postgres"] if POSTGRES_URL or POSTGRES_REQUIRED else [])


@st.composite
def schemas(draw):
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True))
    kinds = {n: draw(st.sampled_from(["text", "integer"])) for n in names}
    fields = {n: text(20) if kinds[n] == "text" else integer(-5, 5) for n in names}
    texts = [n for n in names if kinds[n] == "text"]
    some = lambda pool: draw(st.lists(st.sampled_from(pool), unique=True)) if pool else []  # noqa: E731
    optional = some(names[1:])            # at least one required field
    return Schema("thing", "things", fields, optional=optional, unique=some(names),
                  filters=some(texts), sorts=[f for f in some(texts) if f not in optional],
                  words=some(texts), prefixes=some(texts))


def values(draw, schema, partial):
    found = {}
    for name, kind in schema.fields.items():
        if partial and draw(st.booleans()):
            continue
        if name in schema.optional and draw(st.booleans()):
            if partial:
                found[name] = None
            continue
        found[name] = draw(st.sampled_from(TEXTS) if kind.type == "text" else st.integers(-5, 5))
    return found


@contextmanager
def store_of(kind, schema):
    if kind == "postgres":
        import psycopg
        name = f"usersvc_prop_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {name}")
            try:
                storage = open_store(with_search_path(POSTGRES_URL, name), (schema,))
                try:
                    yield storage["things"]
                finally:
                    storage.close()
            finally:
                admin.execute(f"DROP SCHEMA {name} CASCADE")
    elif kind == "sqlite-file":
        with tempfile.TemporaryDirectory() as tmp:
            storage = open_store(f"sqlite:///{tmp}/things.db", (schema,))
            try:
                yield storage["things"]
            finally:
                storage.close()
    else:
        storage = open_store(kind, (schema,))
        try:
            yield storage["things"]
        finally:
            storage.close()


def outcome(call):
    try:
        return call()
    except StoreError as e:
        return type(e).__name__


@pytest.mark.parametrize("kind", STORES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_store_answers_as_the_memory_store_does(kind, data):
    schema = data.draw(schemas())
    with store_of("memory://", schema) as model, store_of(kind, schema) as store:
        ids = {}                # the model's id -> the store's

        def same(call):
            expected, got = outcome(lambda: call(model, False)), outcome(lambda: call(store, True))
            assert normal(got, ids) == normal(expected, {}), (declaration(schema), expected, got)
            return expected, got

        def step(action):          # one action on both (its lambdas are called before it returns)
            if action == "create":
                fields = values(data.draw, schema, partial=False)
                expected = outcome(lambda: model.create(**fields))
                got = outcome(lambda: store.create(**fields))
                if not isinstance(expected, str) and not isinstance(got, str):
                    # A new id, larger than any before (PostgreSQL's may skip
                    # one a refused create took): the model's, renumbered.
                    assert got.id > max(ids.values(), default=0)
                    ids[expected.id] = got.id
                assert normal(got, ids) == expected, (declaration(schema), expected, got)
            elif action in ("update", "delete"):
                target = data.draw(st.sampled_from([*ids, 99]))
                guard = data.draw(st.sampled_from([None, 1, 2]))
                precondition = None if guard is None else Precondition(match=frozenset({guard}))
                if action == "update":
                    fields = values(data.draw, schema, partial=True)
                    same(lambda s, mine: s.update(ids.get(target, 10**6) if mine else target,
                                                  precondition=precondition, **fields))
                else:
                    same(lambda s, mine: s.delete(ids.get(target, 10**6) if mine else target,
                                                  precondition=precondition))
            else:
                sort = data.draw(st.sampled_from(schema.sorts))
                reverse, limit = data.draw(st.booleans()), data.draw(st.integers(1, 5))
                filters = {f: data.draw(st.sampled_from(TEXTS))
                           for f in schema.filters if data.draw(st.booleans())}
                q = data.draw(st.sampled_from([None, "a", "s", "zo", "b"])) \
                    if schema.searchable else None
                if action == "count":
                    same(lambda s, _: s.count(q=q, **filters))
                else:
                    same(lambda s, _: s.list(limit=limit, sort=sort, reverse=reverse, q=q,
                                             **filters))

        for _ in range(data.draw(st.integers(1, 14))):
            step(data.draw(st.sampled_from(["create", "update", "delete", "list", "count"])))
        same(lambda s, _: [c.record for c in s.changes(limit=1000)])


@pytest.mark.parametrize("kind", ["memory://", *STORES])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_record_without_a_required_field_is_refused_whatever_else_it_holds(kind, data):
    schema = data.draw(schemas())
    document = {name: data.draw(st.sampled_from(TEXTS) if kind_.type == "text"
                                else st.integers(-5, 5))
                for name, kind_ in schema.fields.items()}       # every field, optional ones too
    missing = data.draw(st.lists(st.sampled_from(schema.required), min_size=1, unique=True))
    for name in missing:
        del document[name]
    for check in (schema.for_create, lambda d: schema.for_replace(d, 1)):
        with pytest.raises(Invalid) as refused:
            check(document)
        assert refused.value.errors == [(f"/{f}", "is required") for f in schema.required
                                        if f in missing]
    with store_of(kind, schema) as store:
        with pytest.raises(TypeError):
            store.create(**document)
        assert store.list() == [] and store.changes() == []


def normal(answer, ids):
    """An answer with the store's ids in the model's numbering."""
    back = {store_id: model_id for model_id, store_id in ids.items()}
    if isinstance(answer, list):
        return [normal(a, ids) for a in answer]
    if answer is not None and hasattr(answer, "_replace"):
        return answer._replace(id=back.get(answer.id, answer.id))
    return answer
