"""usersvc/representation (Representations, lists.KeptPages): kept encodings
are reused only for an equal record, pages only for equal records, and ETags
name versions."""
from __future__ import annotations

import pytest

from usersvc import USER
from usersvc.representation import JSON, XML, Representations, etag, version_in

User = USER.record

ADA = User(id=1, name="Ada", email="ada@example.org", version=1)


@pytest.mark.parametrize("fmt", [JSON, XML], ids=["json", "xml"])
def test_an_equal_record_gets_the_kept_bytes(fmt):
    kept = Representations(USER)
    first = kept.one(ADA, fmt)
    assert kept.one(User._make(ADA), fmt) is first     # equal, not the same object: reused


@pytest.mark.parametrize("other", [
    # the same id and version, other fields (a broken store)
    User(id=1, name="Bea", email="bea@example.org", version=1),
    User(id=1, name="Ada", email="ada@example.org", version=2),      # a new version
])
@pytest.mark.parametrize("fmt", [JSON, XML], ids=["json", "xml"])
def test_a_record_that_differs_in_anything_is_encoded_again(fmt, other):
    kept = Representations(USER)
    kept.one(ADA, fmt)
    assert kept.one(other, fmt) == fmt.render(USER, USER.as_dict(other))


def test_a_page_is_the_join_of_its_records_and_its_etag_follows_its_bytes():
    kept = Representations(USER)
    page = [ADA, User(id=2, name="Bea", email="bea@example.org", version=1)]
    body, tag = kept.pages.of(page, JSON)
    assert body == b"[" + b",".join(JSON.render(USER, USER.as_dict(u)) for u in page) + b"]"
    assert kept.pages.of(list(page), JSON) == (body, tag)                  # equal records: kept
    changed = [ADA, User(id=2, name="Bea", email="bea@example.org", version=1)._replace(name="Bee")]
    other_body, other_tag = kept.pages.of(changed, JSON)
    assert b"Bee" in other_body and other_tag != tag
    assert Representations(USER).pages.of(changed, JSON) == (other_body, other_tag)   # bytes decide
    assert kept.pages.of([], XML)[0] == b"<users></users>"


def test_the_kept_encodings_are_let_go_when_full():
    kept = Representations(USER, size=2)
    for i in range(1, 6):
        kept.one(User(id=i, name="U", email=f"u{i}@example.org", version=1), JSON)
    assert kept.one(User(id=5, name="U", email="u5@example.org", version=1), JSON) == \
        b'{"id":5,"name":"U","email":"u5@example.org"}'


def test_etags_name_the_version_in_each_format_and_read_back():
    assert (etag(ADA, JSON), etag(ADA, XML)) == ('"1-1"', '"1-1-xml"')
    assert version_in("1-1", 1) == 1 and version_in("1-7-xml", 1) == 7
    assert version_in("2-1", 1) is None and version_in("abc", 1) is None
