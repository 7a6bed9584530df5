"""The pages follow changes as they happen (Server-Sent Events), in a real
browser (Debian's Chromium; chromium.py): a collection's page marks new,
changed and deleted rows; a record's page says when the record was
changed or deleted elsewhere and keeps what the person typed; after the
server restarts, a page catches up with what was written meanwhile; the
browser's own EventSource resumes by Last-Event-ID and misses nothing;
with tokens on, the tab's token goes with the stream. The writes are made
by another client (the service's HTTP API), as another person would.
"""
from __future__ import annotations

import functools
import json

import chromium
import pytest
from conftest import Client
from helpers import StreamOverHTTP, call, seq_of, serve, stop

from usersvc import DEFAULT_FEATURES, make_app

chromium.require()
from selenium.webdriver.common.by import By  # noqa: E402

browser = chromium.browser
faults = chromium.faults
wait = chromium.wait
WRITER = "writer-0123456789abcdef"


class Service:
    """usersvc on a SQLite file (or ``url``) under waitress, on a port kept across restarts."""

    def __init__(self, path, url=None, **options) -> None:
        self.path, self.options, self.port = path, options, 0
        self.url = url or f"sqlite:///{path}"
        self.app = None
        self.start()

    def start(self) -> None:
        self.app = make_app(self.url, **self.options)
        self.opened = 0                 # streams begun (the app's watchers are told)
        self.app.waiting.watchers.append(self._count)
        self.server = serve(self.app, port=self.port)
        self.server.application = self._read_by_pages     # (waitress calls it)
        self.read = 0                   # pages read as HTML (a live table reads its own again)
        self.port = self.server.effective_port
        self.base = f"http://127.0.0.1:{self.port}"
        self.address = ("127.0.0.1", self.port)

    def stop(self) -> None:
        if self.app is not None:
            stop(self.server)      # (its streams ended, as serve.py's on SIGTERM)
            self.app.close()
            self.app = None

    def followed(self, browser, streams: int = 1) -> None:
        """Until the page's stream of changes is open (the app counts it)."""
        wait(browser, lambda b: self.app.waiting.streams == streams)

    def _count(self, n: int, stream: bool) -> None:
        if stream and n > 0:
            self.opened += 1

    def _read_by_pages(self, environ, start_response):
        if environ.get("HTTP_ACCEPT") == "text/html" and environ["PATH_INFO"] == "/users":
            self.read += 1
        return self.app(environ, start_response)


@pytest.fixture
def service(tmp_path):
    service = Service(tmp_path / "users.db", max_waiting=4)
    yield service
    service.stop()


@pytest.fixture(autouse=True)
def clean_console(browser):
    browser.get_log("browser")
    yield
    assert faults(browser) == []


def create(service, name, headers=None):
    status, h, body = call(service.address, "POST", "/users",
                           {"name": name, "email": f"{name.lower()}@example.org"}, headers)
    assert status == 201, body
    return json.loads(body)["id"]


def row_classes(browser) -> dict[str, str]:
    return {row.get_attribute("data-id"): row.get_attribute("class") or ""
            for row in browser.find_elements(By.CSS_SELECTOR, "tbody tr")}


def marked_words(browser) -> dict[str, str]:
    """Each marked row's word, by id (a row marked twice has one word)."""
    words = {}
    for row in browser.find_elements(By.CSS_SELECTOR, "tbody tr"):
        found = [m.text for m in row.find_elements(By.CSS_SELECTOR, ".mark")]
        if found:
            assert len(found) == 1, found
            words[row.get_attribute("data-id")] = found[0]
    return words


def row_text(browser, record_id) -> str:
    return browser.find_element(By.CSS_SELECTOR, f'tr[data-id="{record_id}"]').text


def test_a_collections_page_marks_new_changed_and_deleted_rows_as_they_happen(browser, service,
                                                                              tmp_path):
    ada, bob = create(service, "Ada"), create(service, "Bob")
    browser.get(service.base + "/users")
    assert row_classes(browser) == {str(ada): "", str(bob): ""}
    service.followed(browser)
    assert call(service.address, "PUT", f"/users/{ada}",
                {"name": "Ada King", "email": "ada@example.org"})[0] == 200
    cy = create(service, "Cy")
    assert call(service.address, "DELETE", f"/users/{bob}")[0] == 204
    wait(browser, lambda b: row_classes(b) == {str(ada): "changed", str(bob): "deleted",
                                               str(cy): "new"})
    assert browser.find_element(By.CSS_SELECTOR, f'tr[data-id="{cy}"]').get_attribute(
        "title") == "New since this page was opened"
    assert "Ada King" in row_text(browser, ada) and "Cy" in row_text(browser, cy)
    # Not a colour alone: a word says each mark, and the status line (a
    # live region, which a screen reader reads out) counts them.
    assert marked_words(browser) == {str(ada): "changed", str(bob): "deleted", str(cy): "new"}
    status = browser.find_element(By.CSS_SELECTOR, ".live")
    assert status.get_attribute("role") == "status"
    assert status.text == "Since this page was opened: 1 new, 1 changed, 1 deleted."
    assert browser.find_element(By.CSS_SELECTOR, ".summary").text == "2 users on this page."
    browser.save_screenshot(str(tmp_path / "live-users.png"))


def row_ids(browser) -> list[str]:
    return [row.get_attribute("data-id")
            for row in browser.find_elements(By.CSS_SELECTOR, "tbody tr")]


def test_a_deleted_row_stays_in_its_place_struck_through(browser, service):
    """docs/api.md: a deleted row is left where it was, struck through,
    not moved to the table's end; nor is a row deleted at the top."""
    ada, bob, cy = create(service, "Ada"), create(service, "Bob"), create(service, "Cy")
    browser.get(service.base + "/users")
    assert row_ids(browser) == [str(ada), str(bob), str(cy)]
    service.followed(browser)
    assert call(service.address, "DELETE", f"/users/{bob}")[0] == 204
    wait(browser, lambda b: row_classes(b)[str(bob)] == "deleted")
    assert row_ids(browser) == [str(ada), str(bob), str(cy)]
    assert browser.find_element(By.CSS_SELECTOR, f'tr[data-id="{bob}"] td').value_of_css_property(
        "text-decoration-line") == "line-through"
    assert call(service.address, "DELETE", f"/users/{ada}")[0] == 204
    dan = create(service, "Dan")
    wait(browser, lambda b: row_classes(b) == {str(ada): "deleted", str(bob): "deleted",
                                               str(cy): "", str(dan): "new"})
    assert row_ids(browser) == [str(ada), str(bob), str(cy), str(dan)]


def test_a_catch_up_that_finds_nothing_new_leaves_the_rows_alone(browser, service):
    """Each time its stream opens again, a collection's page reads itself
    again; found the same, its rows stay the very elements they were (a
    person pointing at one, about to click, keeps it): only a change
    replaces them."""
    ada = create(service, "Ada")
    browser.get(service.base + "/users")
    service.followed(browser)
    browser.execute_script("""
        window.replaced = 0;
        new MutationObserver((records) => { window.replaced += records.length; })
          .observe(document.querySelector("[data-live].table table"), { childList: true });""")
    wait(browser, lambda b: service.read == 1)          # (its first catch-up, as it opened)
    service.stop()
    service.start()                                     # the stream opens again: a catch-up
    wait(browser, lambda b: service.read == 1 and service.opened == 1)
    bob = create(service, "Bob")                        # and a change, after it
    wait(browser, lambda b: row_classes(b) == {str(ada): "", str(bob): "new"})
    assert browser.execute_script("return window.replaced") == 1     # the change's, alone


def test_a_records_page_says_it_changed_elsewhere_and_keeps_what_was_typed(browser, service,
                                                                           tmp_path):
    ada = create(service, "Ada")
    browser.get(f"{service.base}/users/{ada}")
    service.followed(browser)
    notice = browser.find_element(By.CSS_SELECTOR, ".live")
    name = browser.find_element(By.CSS_SELECTOR, "form.record input[name=name]")
    name.clear()
    name.send_keys("Ada, not yet saved")
    assert call(service.address, "PUT", f"/users/{ada}",
                {"name": "Ada King", "email": "ada@example.org"})[0] == 200
    wait(browser, lambda b: "changed elsewhere" in notice.text)
    assert name.get_attribute("value") == "Ada, not yet saved"
    browser.save_screenshot(str(tmp_path / "live-user.png"))
    assert call(service.address, "DELETE", f"/users/{ada}")[0] == 204
    wait(browser, lambda b: notice.text == "This user was deleted elsewhere.")


def test_a_records_own_save_is_not_a_change_elsewhere(browser, service):
    ada = create(service, "Ada")
    browser.get(f"{service.base}/users/{ada}")
    name = browser.find_element(By.CSS_SELECTOR, "form.record input[name=name]")
    name.clear()
    name.send_keys("Ada Lovelace")
    browser.find_element(By.CSS_SELECTOR, "form.record button").click()
    wait(browser, lambda b: b.find_element(By.CSS_SELECTOR, ".flash").text == "Saved.")
    assert browser.find_element(By.CSS_SELECTOR, "h1").text == "Ada Lovelace"
    assert call(service.address, "GET", "/users/changes?after=1")[0] == 200
    assert browser.find_element(By.CSS_SELECTOR, ".live").text == ""


def test_after_a_restart_a_page_catches_up_with_what_was_written_meanwhile(browser, service):
    ada = create(service, "Ada")
    browser.get(service.base + "/users")
    service.followed(browser)
    service.stop()
    meanwhile = make_app(f"sqlite:///{service.path}")        # another process, while it is down
    assert Client(meanwhile).create("Bob", "bob@example.org")["id"] == ada + 1
    meanwhile.close()
    service.start()
    wait(browser, lambda b: row_classes(b) == {str(ada): "", str(ada + 1): "new"}, timeout=20)


def test_after_a_restart_a_records_page_says_what_was_done_to_it_meanwhile(browser, service):
    ada, bob = create(service, "Ada"), create(service, "Bob")
    browser.get(f"{service.base}/users/{ada}")
    service.followed(browser)
    other = browser.current_window_handle
    browser.switch_to.new_window("tab")
    browser.get(f"{service.base}/users/{bob}")
    service.followed(browser, streams=2)
    service.stop()
    meanwhile = make_app(f"sqlite:///{service.path}")        # another process, while it is down
    client = Client(meanwhile)
    assert client.put(f"/users/{ada}", json_body={"name": "Ada King",
                                                  "email": "ada@example.org"}).status_code == 200
    assert client.delete(f"/users/{bob}").status_code == 204
    meanwhile.close()
    service.start()
    try:
        wait(browser, lambda b: b.find_element(By.CSS_SELECTOR, ".live").text
             == "This user was deleted elsewhere.", timeout=20)
    finally:
        browser.close()
        browser.switch_to.window(other)
    wait(browser, lambda b: "changed elsewhere" in b.find_element(By.CSS_SELECTOR, ".live").text,
         timeout=20)


def test_going_from_page_to_page_leaves_no_slot_to_a_page_left(browser, tmp_path):
    """One slot, as a small server has few: each page a person opens takes
    it from the page they left (whose connection the browser closed), and
    the last one still follows the changes."""
    service = Service(tmp_path / "users.db", max_waiting=1)

    def streams_alone(opened, b):
        return service.opened == opened and service.app.waiting.streams == 1
    try:
        ada = create(service, "Ada")
        for n, url in enumerate(("/users", f"/users/{ada}", "/users", f"/users/{ada}", "/users")):
            browser.get(service.base + url)
            # This page's stream, not the last one's: begun, and the only one.
            wait(browser, functools.partial(streams_alone, n + 1))
        bob = create(service, "Bob")
        wait(browser, lambda b: row_classes(b) == {str(ada): "", str(bob): "new"})
    finally:
        service.stop()


def test_a_page_turned_away_says_it_is_not_live_and_becomes_live_when_a_place_is_free(
        browser, tmp_path):
    """Past the server's waiting places a page's stream is turned away: the
    page says so where it says it is live (it said "changes show here as
    they happen" and heard nothing), reads its URL again at each retry (a
    record made meanwhile is shown, unmarked: no stream said what changed),
    and asks again until it has a place; then it says it is live again, and
    marks changes as they come."""
    service = Service(tmp_path / "users.db", max_waiting=1)
    held = StreamOverHTTP(service.address)          # another client has the one place
    try:
        assert held.next()["retry"] == "2000"
        ada = create(service, "Ada")
        browser.get(service.base + "/users")

        def status(b) -> str:
            return b.find_element(By.CSS_SELECTOR, ".live").text
        wait(browser, lambda b: status(b) == "Not live: the server is busy; trying again "
                                              "every 2 s.")
        browser.save_screenshot(str(tmp_path / "not-live.png"))
        cy = create(service, "Cy")                  # not live, it reads its URL again on a timer
        # (shown unmarked: no stream said what changed)
        wait(browser, lambda b: row_classes(b) == {str(ada): "", str(cy): ""}, timeout=20)
        assert status(browser).startswith("Not live: the server is busy")
        held.close()                                # it goes: its place comes to the page
        wait(browser, lambda b: service.app.waiting.streams == 1
             and status(b) == "New, changed and deleted users show here as they happen.",
             timeout=20)
        bob = create(service, "Bob")
        wait(browser, lambda b: row_classes(b) == {str(ada): "", str(cy): "", str(bob): "new"})
        assert status(browser) == "Since this page was opened: 1 new."
    finally:
        service.stop()


def test_a_page_served_without_the_waiting_feature_says_it_is_not_live(browser, tmp_path):
    """Pages without the waiting feature (``features=`` without it): the
    feed offers no stream (a 406), and a page says it is not live and reads
    itself again at each retry, where it stopped following, saying nothing."""
    app = make_app(f"sqlite:///{tmp_path / 'users.db'}",
                   features=tuple(f for f in DEFAULT_FEATURES if f != "waiting"))
    server = serve(app)
    address = ("127.0.0.1", server.effective_port)
    try:
        made = [call(address, "POST", "/users", {"name": n, "email": f"{n}@example.org"})
                for n in ("ada", "bob")]
        ada, bob = (json.loads(body)["id"] for _, _, body in made)
        assert call(address, "GET", "/users/changes",
                    headers={"Accept": "text/event-stream"})[0] == 406
        browser.get(f"http://127.0.0.1:{server.effective_port}/users")
        wait(browser, lambda b: b.find_element(By.CSS_SELECTOR, ".live").text == (
            "Not live: this server sends no changes as they happen; reading the page again "
            "every 2 s."))
        made = call(address, "POST", "/users", {"name": "cy", "email": "cy@example.org"})
        cy = json.loads(made[2])["id"]
        wait(browser, lambda b: row_classes(b) == {str(ada): "", str(bob): "", str(cy): ""},
             timeout=20)
    finally:
        stop(server)
        app.close()


def test_a_page_of_a_server_where_nothing_may_wait_says_so_and_reads_itself_again(
        browser, tmp_path):
    """With no waiting place at all (``--max-waiting 0``) a page is never
    live: it says that, not that the server is busy, and reads its URL
    again at each retry (a record made meanwhile is shown)."""
    service = Service(tmp_path / "users.db", max_waiting=0)
    try:
        ada = create(service, "Ada")
        browser.get(service.base + "/users")
        wait(browser, lambda b: b.find_element(By.CSS_SELECTOR, ".live").text == (
            "Not live: this server sends no changes as they happen; reading the page again "
            "every 2 s."))
        bob = create(service, "Bob")
        wait(browser, lambda b: row_classes(b) == {str(ada): "", str(bob): ""}, timeout=20)
    finally:
        service.stop()


def test_a_page_back_from_the_browsers_cache_catches_up_from_its_last_event(browser, service):
    """Left, a page kept by the browser (back/forward cache) lets go of its
    stream; shown again, it resumes from its last event: a record made
    while it was away is marked new, as if it had never stopped."""
    ada = create(service, "Ada")
    browser.get(service.base + "/users")
    service.followed(browser)
    browser.execute_script("window.kept = true")
    browser.get(f"{service.base}/users/{ada}")
    wait(browser, lambda b: service.opened == 2)      # (the record page's stream)
    bob = create(service, "Bob")
    browser.back()
    assert browser.execute_script("return window.kept === true"), \
        "the page was not kept by the browser's back/forward cache"
    wait(browser, lambda b: row_classes(b) == {str(ada): "", str(bob): "new"})


def test_the_browsers_own_event_source_resumes_by_last_event_id_after_a_restart(browser, service):
    create(service, "Ada")
    browser.get(service.base + "/users")
    browser.execute_script("""
        window.seen = []; window.opened = 0;
        const feed = new EventSource("/users/changes?after=0");
        feed.onopen = () => { window.opened += 1; };
        for (const kind of ["change", "delete"]) {
          feed.addEventListener(kind, (e) => window.seen.push([e.lastEventId, kind]));
        }""")
    wait(browser, lambda b: b.execute_script("return window.seen.length") == 1)
    service.stop()
    meanwhile = make_app(f"sqlite:///{service.path}")        # another process, while it is down
    client = Client(meanwhile)
    client.create("Bob", "bob@example.org")
    client.delete("/users/1")
    meanwhile.close()
    service.start()
    create(service, "Cy")
    wait(browser, lambda b: b.execute_script("return window.seen.length") == 4, timeout=20)
    seen = browser.execute_script("return window.seen")
    assert [(seq_of(place), kind) for place, kind in seen] == [
        (1, "change"), (2, "change"), (3, "delete"), (4, "change")]
    assert len({place.rsplit(".", 1)[1] for place, _ in seen}) == 1     # one history: the file's
    assert browser.execute_script("return window.opened") == 2      # one reconnect, by itself


def test_a_page_across_a_memory_restart_shows_the_new_history_alone(browser, tmp_path):
    """A memory service restarted has another history: its records 1-3 are
    new ones. The page's stream, resumed with its last event's id, is told
    to drop what it holds (event: reset), and the page reads itself again:
    the new records alone, none marked as changed since it was opened."""
    service = Service(tmp_path / "none.db", url="memory://")
    try:
        create(service, "Ada")
        create(service, "Bob")
        browser.get(service.base + "/users")
        service.followed(browser)
        browser.execute_script("window.before = true")     # gone once the page is read again
        service.stop()
        service.start()                             # memory: a new history
        for name in ("Zed", "Yan", "Xia"):          # 1-3 again, past the page's place
            create(service, name)
        wait(browser, lambda b: b.execute_script("return window.before === undefined"), timeout=20)
        wait(browser, lambda b: len(row_classes(b)) == 3)
        text = browser.find_element(By.CSS_SELECTOR, "tbody").text
        assert "Ada" not in text and "Bob" not in text
        assert all(name in text for name in ("Zed", "Yan", "Xia"))
        assert row_classes(browser) == {"1": "", "2": "", "3": ""}     # read anew, unmarked
    finally:
        service.stop()


def test_with_tokens_the_tabs_token_goes_with_the_stream(browser, tmp_path):
    service = Service(tmp_path / "users.db", tokens={WRITER: "write"})
    try:
        auth = {"Authorization": f"Bearer {WRITER}"}
        ada = create(service, "Ada", auth)
        browser.get(service.base + "/users")
        browser.find_element(By.CSS_SELECTOR, "form.token input[name=token]").send_keys(WRITER)
        browser.find_element(By.CSS_SELECTOR, "form.token button").click()
        wait(browser, lambda b: row_classes(b) == {str(ada): ""})
        bob = create(service, "Bob", auth)
        wait(browser, lambda b: row_classes(b) == {str(ada): "", str(bob): "new"})
    finally:
        browser.execute_script("sessionStorage.clear()")
        service.stop()
