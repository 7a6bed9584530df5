"""How tests/data/release-0.1.0.db and release-0.1.0.sql were made: run
once, with usersvc 0.1.0 (commit 0f2030f, the last release before
collections were declared), kept for what it made. It does not run against
later trees: it is history, like a migration.

    python tests/data/make_release_0_1_0.py DIR postgresql://127.0.0.1/test
"""
import subprocess
import sys

import psycopg

from usersvc.storage import open_store


def fill(store):
    """Six users; the fourth renamed twice, the third and the sixth (the
    highest id) deleted: the id high-water mark (6) is above every id kept,
    versions differ, and the feed's positions are out of id order."""
    people = [("Ada Lovelace", "Ada@Example.org"), ("Émile Zola-Ada", "ez@example.org"),
              ("bob", "bob@example.org"), ("Grace Hopper", "grace@example.org"),
              ("Ünïcødé Name", "u@example.org"), ("Last One", "last@example.org")]
    for name, email in people:
        store.create(name=name, email=email)
    store.update(4, name="Grace B. Hopper")
    store.update(4, email="GRACE@example.org")
    store.delete(3)
    store.delete(6)
    store.update(1, name="Ada King")


def main(folder, postgres):
    store = open_store(f"sqlite:///{folder}/release-0.1.0.db")
    fill(store)
    store.close()
    schema = "usersvc_release_0_1_0"
    with psycopg.connect(postgres, autocommit=True) as db:
        db.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        db.execute(f"CREATE SCHEMA {schema}")
    store = open_store(f"{postgres}?options=-csearch_path%3D{schema}")
    fill(store)
    store.close()
    dump = subprocess.run(["pg_dump", "--no-owner", "--no-privileges", "--inserts",
                           "--schema", schema, postgres],
                          check=True, capture_output=True, text=True).stdout
    with open(f"{folder}/release-0.1.0.sql", "w") as f:
        f.write(dump)
    with psycopg.connect(postgres, autocommit=True) as db:
        db.execute(f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    main(*sys.argv[1:])
