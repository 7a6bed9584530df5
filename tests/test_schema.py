"""docs/api.md, "The user resource": the field rules, checked directly."""
from __future__ import annotations

import pytest
from conftest import Client
from hypothesis import given, strategies as st

from usersvc.fields import text, words
from usersvc.schema import USER, Invalid, Schema, pointer

OK = {"name": "Ada Lovelace", "email": "ada@example.org"}


def errors_of(document, record_id=None, how="create"):
    with pytest.raises(Invalid) as caught:
        if how == "create":
            USER.for_create(document)
        elif how == "replace":
            USER.for_replace(document, record_id)
        else:
            USER.for_patch(document, record_id)
    return dict(caught.value.errors)


def test_a_valid_user_comes_back_trimmed():
    assert USER.for_create({"name": " Ada ", "email": "\tada@example.org "}) == \
        {"name": "Ada", "email": "ada@example.org"}


# -- name ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["A", "x" * 200, " " + "x" * 200 + " ", "Zoë", "李", "🦄" * 200,
                                  "O'Brien-Smith, Jr.", "a b"])
def test_names_that_are_valid(name):
    assert USER.for_create({**OK, "name": name})["name"] == name.strip()


@pytest.mark.parametrize("name, detail", [
    ("", "must not be empty"),
    ("   \t\n ", "must not be empty"),
    ("x" * 201, "must be at most 200 characters long"),
    ("🦄" * 201, "must be at most 200 characters long"),
    ("Ada\x00Lovelace", "must not contain control characters"),
    ("Ada\nLovelace", "must not contain control characters"),
    ("Ada\x7f", "must not contain control characters"),
    ("Ada\x85x", "must not contain control characters"),
    ("Ada\ud800", "must be Unicode text (no surrogates or non-characters)"),
    ("Ada\uffff", "must be Unicode text (no surrogates or non-characters)"),
])
def test_names_that_are_not(name, detail):
    assert errors_of({**OK, "name": name}) == {"/name": detail}


def test_name_length_counts_code_points_after_trimming():
    assert USER.for_create({**OK, "name": "  " + "é" * 200 + "  "})["name"] == "é" * 200


# -- email ---------------------------------------------------------------

@pytest.mark.parametrize("email", [
    "a@b", "ada@example.org", "first.last+tag@sub.example.co.uk", "x@localhost",
    "!#$%&'*+/=?^_`{|}~-@example.org", "a@" + "b" * 63, "a@1.2.3.4", ".a..b.@example.org",
    "a@" + ".".join(["c" * 63] * 3) + "." + "d" * 60,    # exactly 254 characters
])
def test_emails_that_whatwg_calls_valid(email):
    assert USER.for_create({**OK, "email": email})["email"] == email


@pytest.mark.parametrize("email", [
    "", "plain", "@example.org", "ada@", "ada@@example.org", "ada@-example.org",
    "ada@example-.org", "ada@example..org", "ada@.example.org", "ada@example.org.",
    "a b@example.org", "ada@exa mple.org", "zoë@example.org", "ada@exämple.org",
    '"quoted"@example.org', "ada@[127.0.0.1]", "a@" + "b" * 64, "ada@example.org\nx",
    "ada@example.org\x00", "ada(comment)@example.org", "ada@example_org.com",
])
def test_emails_that_whatwg_calls_invalid(email):
    detail = errors_of({**OK, "email": email})["/email"]
    assert detail == "is not a valid e-mail address"


def test_emails_over_254_characters_are_refused():
    email = "a@" + ".".join(["c" * 63] * 3) + "." + "d" * 61
    assert len(email) == 255
    assert errors_of({**OK, "email": email}) == {"/email": "must be at most 254 characters long"}


# -- documents -------------------------------------------------------------

def test_every_problem_is_reported():
    errors = errors_of({"name": 1, "email": "x", "id": 4, "a": 1, "b/c~": 2})
    assert errors == {
        "/name": "must be a string",
        "/email": "is not a valid e-mail address",
        "/id": "is assigned by the service and cannot be sent",
        "/a": "is not a field of a user",
        "/b~1c~0": "is not a field of a user",
    }


def test_the_detail_counts_the_problems():
    with pytest.raises(Invalid) as one:
        USER.for_create({**OK, "name": ""})
    assert one.value.detail == "The user has 1 invalid field."


@pytest.mark.parametrize("document", [[], "Ada", 3, None, True])
def test_a_document_that_is_not_an_object(document):
    assert errors_of(document) == {"": "must be a user object"}


def test_replace_requires_every_field_and_checks_id():
    assert errors_of({"name": "A"}, 5, "replace") == {"/email": "is required"}
    assert errors_of({**OK, "id": 6}, 5, "replace") == \
        {"/id": "must be 5, the id in the path, if it is sent"}
    assert errors_of({**OK, "id": True}, 1, "replace") == \
        {"/id": "must be 1, the id in the path, if it is sent"}
    assert USER.for_replace({**OK, "id": 5}, 5) == OK


def test_patch_takes_any_subset_but_no_nulls():
    assert USER.for_patch({}, 1) == {}
    assert USER.for_patch({"email": "b@example.org"}, 1) == {"email": "b@example.org"}
    assert errors_of({"name": None, "email": None}, 1, "patch") == {
        "/name": "is required and cannot be removed",
        "/email": "is required and cannot be removed"}


def test_pointer_escapes_per_rfc_6901():
    assert pointer("a/b") == "/a~1b"
    assert pointer("m~n") == "/m~0n"
    assert pointer("") == "/"


def test_the_control_character_class_is_exactly_unicode_category_cc():
    import sys
    import unicodedata

    from usersvc.fields import _NOT_PLAIN as _CC
    cc = {chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cc"}
    assert {chr(c) for c in range(0x100) if _CC.fullmatch(chr(c))} == cc


def test_words_are_folded_and_split_at_everything_but_letters_digits_and_spacing_marks():
    assert words("Ada Lovelace-Byron") == ["ada", "lovelace", "byron"]
    assert words("snake_case x2") == ["snake", "case", "x2"]
    assert words("Zoë Dvořák") == ["zoe", "dvorak"]
    assert words("e\u0301clair Øre-Łódź") == ["eclair", "ore", "lodz"]   # NFKD, marks gone
    # A spacing vowel sign (Mc) stays in its word; the virama (Mn) goes.
    assert words("हिन्दी नाम") == ["हिनदी", "नाम"]


@given(st.text() | st.text(st.characters(max_codepoint=127)))
def test_fold_is_its_definition_on_ascii_text_too(text):
    """``fold`` answers ASCII text without decomposing it: what the whole
    definition (NFKD, case-folded, NFKD, marks removed, letters mapped) gives."""
    import unicodedata

    from usersvc.fields import _WHOLE, fold
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    assert fold(text) == "".join(
        c for c in decomposed if unicodedata.category(c) != "Mn").translate(_WHOLE)


def test_a_record_is_made_by_name_only_and_an_optional_field_left_out_is_none():
    from books import BOOKS
    assert USER.record(id=1, name="Ada", email="a@example.org", version=2).email == "a@example.org"
    assert BOOKS.record(id=1, title="Dune", isbn="1", version=1).year is None
    with pytest.raises(TypeError):
        USER.record(1, "Ada", "a@example.org", 2)       # by position: a field added would shift
    with pytest.raises(TypeError):
        USER.record(id=1, name="Ada", version=2)        # a required field missing


@pytest.mark.parametrize("name, said", [("user", "a user"), ("issue", "an issue"),
                                        ("item", "an item"), ("order", "an order"),
                                        ("umbrella", "an umbrella"), ("unit", "a unit"),
                                        ("book", "a book"), ("entry", "an entry")])
def test_what_is_said_of_one_record_takes_the_article_its_name_is_said_with(name, said):
    """Once "a issue" in problems, OpenAPI and the feed's description."""
    from usersvc import make_app
    from usersvc.declaration import with_article
    assert with_article(name) == said
    schema = Schema(name, name + "s", {"title": text(9)})
    client = Client(make_app("memory://", collections=(schema,)))
    answer = client.post(f"/{name}s", json_body={"title": "a", "colour": "red"})
    assert answer.json["errors"] == [{"pointer": "/colour",
                                      "detail": f"is not a field of {said}"}]
    paths = client.get("/openapi.json").json["paths"]
    assert paths[f"/{name}s"]["post"]["summary"] == f"Create {said}."
