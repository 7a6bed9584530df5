"""The HTML pages as a person uses them, in a real browser (Debian's
Chromium through selenium; see chromium.py): follow the links, use every
form, see a stale edit refused and a readable 404, with tokens on as well.

After every test the browser's console must hold no Content Security Policy
violation and no script error (``test_the_console_check_sees_a_violation``
shows the check catching one).
"""
from __future__ import annotations

import chromium
import pytest
from helpers import call, serve, stop

from usersvc import make_app

chromium.require()
from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"
READER, WRITER = "reader-0123456789abcdef", "writer-0123456789abcdef"
browser = chromium.browser
faults = chromium.faults
wait = chromium.wait


def open_service(**options):
    app = make_app("memory://", **options)
    server = serve(app)
    return app, server, f"http://127.0.0.1:{server.effective_port}"


@pytest.fixture(scope="module")
def service():
    app, server, base = open_service()
    yield base, ("127.0.0.1", server.effective_port)
    stop(server)
    app.close()


@pytest.fixture(scope="module")
def guarded():
    app, server, base = open_service(tokens={READER: "read", WRITER: "write"})
    yield base, ("127.0.0.1", server.effective_port)
    stop(server)
    app.close()


@pytest.fixture(autouse=True)
def clean_console(browser):
    browser.get_log("browser")          # what earlier tests left
    yield
    assert faults(browser) == []


def text_of(browser, selector):
    return browser.find_element(By.CSS_SELECTOR, selector).text


def heading_is(text):
    return lambda b: b.find_element(By.TAG_NAME, "h1").text == text


def fill(browser, form, **fields):
    for name, value in fields.items():
        field = browser.find_element(By.CSS_SELECTOR, f"{form} input[name={name}]")
        field.clear()
        field.send_keys(value)
    browser.find_element(By.CSS_SELECTOR, f"{form} p.actions button").click()


def create(address, name, email, token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    status, response_headers, body = call(address, "POST", "/users",
                                          {"name": name, "email": email}, headers)
    assert status == 201, body
    return response_headers["Location"].rsplit("/", 1)[1]


def test_a_person_follows_links_and_uses_every_form(service, browser):
    base, address = service
    browser.get(base + "/")
    assert browser.title == "usersvc · usersvc"
    browser.find_element(By.CSS_SELECTOR, "ul.collections a").click()
    wait(browser, heading_is("Users"))

    fill(browser, "form.record", name="Grace Hopper", email="grace@example.org")
    wait(browser, heading_is("Grace Hopper"))
    assert text_of(browser, ".flash") == "Created."
    user_url = browser.current_url
    assert user_url.startswith(base + "/users/")
    user_id = user_url.rsplit("/", 1)[1]

    fill(browser, "form.record", name="Grace Brewster Hopper")
    wait(browser, heading_is("Grace Brewster Hopper"))
    assert text_of(browser, ".flash") == "Saved."

    # A field error appears beside its field, in an alert.
    fill(browser, "form.record", name="   ")
    wait(browser, lambda b: text_of(b, "#edit-name-error") == "must not be empty")
    error = browser.find_element(By.ID, "edit-name-error")
    assert error.get_attribute("role") == "alert"
    assert "422 Unprocessable Content" in text_of(browser, 'form.record p[data-error-for=""]')

    # Someone else changes the user: this page's edit is refused, not written.
    status, _, _ = call(address, "PATCH", f"/users/{user_id}", b'{"name": "Amazing Grace"}',
                        {"Content-Type": "application/merge-patch+json"})
    assert status == 200
    fill(browser, "form.record", name="Grace Hopper")
    wait(browser, lambda b: "412" in text_of(b, 'form.record p[data-error-for=""]'))
    assert "changed after this page was loaded" in text_of(browser, 'form.record p[role="alert"]')
    assert b'"Amazing Grace"' in call(address, "GET", f"/users/{user_id}")[2]

    browser.refresh()
    wait(browser, heading_is("Amazing Grace"))
    browser.find_element(By.XPATH, "//button[text()='Delete']").click()
    wait(browser, EC.alert_is_present()).accept()
    wait(browser, heading_is("Users"))
    assert text_of(browser, ".flash") == "Deleted Amazing Grace."
    assert "Amazing Grace" not in text_of(browser, "table")
    assert call(address, "GET", f"/users/{user_id}")[0] == 404


def test_paging_by_the_next_link_and_searching(service, browser):
    base, address = service
    names = [f"Pager {chr(65 + i)}" for i in range(5)]
    for name in names:
        create(address, name, f"{name.split()[1].lower()}@pager.example")
    browser.get(base + "/users?q=pager&limit=2")
    seen = []
    while True:
        seen += [row.text
                 for row in browser.find_elements(By.CSS_SELECTOR, "tbody td:nth-child(2)")]
        following = browser.find_elements(By.CSS_SELECTOR, 'a[rel="next"]')
        if not following:
            break
        following[0].click()
        wait(browser, EC.staleness_of(following[0]))
    assert seen == names

    browser.get(base + "/users")
    search = browser.find_element(By.ID, "q")
    search.send_keys("c@pager")
    search.submit()
    wait(browser, lambda b: "q=c%40pager" in b.current_url)
    rows = browser.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert [r.text.split(" ", 1)[1] for r in rows] == ["Pager C c@pager.example"]
    assert browser.find_element(By.ID, "q").get_attribute("value") == "c@pager"
    browser.find_element(By.LINK_TEXT, "Show all").click()
    wait(browser, lambda b: b.current_url == base + "/users")


def test_a_hostile_name_is_text_and_runs_nothing(service, browser):
    base, address = service
    user_id = create(address, HOSTILE, "hostile@example.org")
    for path in ("/users", f"/users/{user_id}"):
        browser.get(base + path)
        assert HOSTILE in browser.find_element(By.TAG_NAME, "main").text
        with pytest.raises(NoAlertPresentException):
            _ = browser.switch_to.alert.text        # (raises: no alert was opened)
        assert browser.find_elements(By.CSS_SELECTOR, "main img") == []
    assert browser.find_element(By.TAG_NAME, "h1").text == HOSTILE


def test_a_missing_user_is_a_readable_404_page(service, browser):
    base, _ = service
    browser.get(base + "/users/999999")
    assert browser.title == "404 Not Found · usersvc"
    assert browser.find_element(By.TAG_NAME, "h1").text == "404 Not Found"
    assert text_of(browser, "p.detail") == "There is no user with id 999999."
    browser.find_element(By.LINK_TEXT, "Go to the start").click()
    wait(browser, heading_is("usersvc"))
    browser.get_log("browser")          # the 404 itself is logged as a failed load


def test_with_tokens_a_person_enters_one_and_browses_and_edits(guarded, browser):
    base, address = guarded
    user_id = create(address, "Ada Lovelace", "ada@example.org", WRITER)
    browser.get(base + "/users")
    assert browser.find_element(By.TAG_NAME, "h1").text == "401 Unauthorized"
    fill(browser, "form.token", token=READER)
    wait(browser, heading_is("Users"))
    assert browser.find_element(By.CSS_SELECTOR, ".token-status").is_displayed()
    browser.find_element(By.LINK_TEXT, "Ada Lovelace").click()
    wait(browser, heading_is("Ada Lovelace"))
    assert browser.current_url == f"{base}/users/{user_id}"

    fill(browser, "form.record", name="Ada King")     # a read token may not write
    wait(browser, lambda b: "403" in text_of(b, 'form.record p[data-error-for=""]'))

    browser.find_element(By.XPATH, "//button[text()='Forget it']").click()
    wait(browser, heading_is("401 Unauthorized"))
    fill(browser, "form.token", token=WRITER)
    wait(browser, heading_is("Ada Lovelace"))
    fill(browser, "form.record", name="Ada King")
    wait(browser, heading_is("Ada King"))
    assert text_of(browser, ".flash") == "Saved."
    assert READER not in browser.current_url and WRITER not in browser.current_url
    assert browser.get_cookies() == []
    assert browser.execute_script("return sessionStorage.getItem('usersvc-token')") == WRITER
    browser.execute_script("sessionStorage.clear()")
    browser.get_log("browser")          # the 401s and the 403 are logged as failed loads


def test_the_console_check_sees_a_violation(service, browser):
    base, _ = service
    browser.get(base + "/users")
    browser.execute_script(
        "const i = document.createElement('img'); i.src = 'http://example.invalid/x.png';"
        "document.body.append(i);")
    wait(browser, lambda b: (found := faults(b)) and found)
