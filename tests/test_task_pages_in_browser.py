"""The pages of a collection of every kind (``examples/tasks.py``'s tasks),
as a person uses them in a real browser: each kind asked with its input (a
checkbox, a ``<select>``, a number that takes a fraction, a date, a
``datetime-local`` in UTC, a URL), a task made and changed through the
forms, and what the service kept read back over HTTP; and an optional
boolean set, cleared and set false through its ``<select>``."""
from __future__ import annotations

import json
import sys

import chromium
import pytest
from helpers import ROOT, call, serve, stop

from usersvc import USER, Schema, boolean, make_app, text

chromium.require()
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select  # noqa: E402

sys.path.insert(0, str(ROOT / "examples"))
from tasks import TASKS  # noqa: E402

browser = chromium.browser
wait = chromium.wait

@pytest.fixture
def service():
    app = make_app("memory://", collections=(USER, TASKS))
    server = serve(app)
    yield f"http://127.0.0.1:{server.effective_port}", ("127.0.0.1", server.effective_port)
    stop(server)
    app.close()


def field(browser, form, name):
    return browser.find_element(By.CSS_SELECTOR, f"{form} [name={name}]")


def put(browser, element, value):
    """A value into an input as the browser's own picker leaves it (typing
    into date inputs depends on the locale)."""
    browser.execute_script("arguments[0].value = arguments[1]", element, value)


def heading_is(text):
    return lambda b: b.find_element(By.TAG_NAME, "h1").text == text


def test_a_task_is_made_and_changed_through_the_inputs_of_its_kinds(service, browser, tmp_path):
    base, address = service
    status, _, _ = call(address, "POST", "/users", {"name": "Ada", "email": "ada@example.org"})
    assert status == 201
    browser.get(base + "/tasks")
    form = "form.record"
    kinds = {name: (field(browser, form, name).tag_name,
                    field(browser, form, name).get_attribute("type"))
             for name in ("title", "done", "estimate", "due", "remind_at", "priority", "link",
                          "owner")}
    assert kinds == {"title": ("input", "text"), "done": ("input", "checkbox"),
                     "estimate": ("input", "number"), "due": ("input", "date"),
                     "remind_at": ("input", "datetime-local"), "priority": ("select", "select-one"),
                     "link": ("input", "url"), "owner": ("input", "number")}
    # The owner's input offers the users it may name (a datalist: the browser
    # lists them as the person types), by id, each labelled by its name.
    assert field(browser, form, "owner").get_attribute("list") == "new-owner-records"
    assert [(o.get_attribute("value"), o.get_attribute("textContent")) for o in
            browser.find_elements(By.CSS_SELECTOR, "datalist#new-owner-records option")] == [
        ("1", "Ada")]
    # created and updated are the service's: no input asks for them.
    assert browser.find_elements(By.CSS_SELECTOR, f"{form} [name=created]") == []

    field(browser, form, "title").send_keys("Write the notes")
    field(browser, form, "done").click()
    field(browser, form, "estimate").send_keys("2.5")
    put(browser, field(browser, form, "due"), "2026-12-01")
    put(browser, field(browser, form, "remind_at"), "2026-11-30T08:00")
    Select(field(browser, form, "priority")).select_by_visible_text("high")
    field(browser, form, "link").send_keys("https://example.org/notes")
    field(browser, form, "owner").send_keys("1")
    browser.save_screenshot(str(tmp_path / "new-task.png"))
    browser.find_element(By.CSS_SELECTOR, f"{form} p.actions button").click()
    wait(browser, heading_is("Write the notes"))

    task_url = browser.current_url
    kept = json.loads(call(address, "GET", task_url.removeprefix(base))[2])
    assert {k: v for k, v in kept.items() if k not in ("created", "updated")} == {
        "id": 1, "title": "Write the notes", "done": True, "estimate": 2.5, "due": "2026-12-01",
        "remind_at": "2026-11-30T08:00:00Z", "priority": "high",
        "link": "https://example.org/notes", "owner": 1}

    # The edit form holds what was kept, each in its input; untick, reschedule.
    assert field(browser, form, "done").is_selected()
    assert Select(field(browser, form, "priority")).first_selected_option.text == "high"
    assert field(browser, form, "remind_at").get_attribute("value") == "2026-11-30T08:00"
    field(browser, form, "done").click()
    put(browser, field(browser, form, "remind_at"), "2026-12-01T07:30:15")
    browser.save_screenshot(str(tmp_path / "edit-task.png"))
    browser.find_element(By.CSS_SELECTOR, f"{form} p.actions button").click()
    wait(browser, lambda b: b.find_element(By.CSS_SELECTOR, ".flash").text == "Saved.")
    kept = json.loads(call(address, "GET", task_url.removeprefix(base))[2])
    assert kept["done"] is False and kept["remind_at"] == "2026-12-01T07:30:15Z"
    assert kept["updated"] >= kept["created"]

    # A value the service refuses is shown beside its input.
    put(browser, field(browser, form, "owner"), "99")
    browser.find_element(By.CSS_SELECTOR, f"{form} p.actions button").click()
    wait(browser, lambda b: b.find_element(By.ID, "edit-owner-error").text
         == "there is no user 99")
    assert chromium.faults(browser) == []


NOTES = Schema("note", "notes", {"text": text(100), "pinned": boolean}, optional=("pinned",))


def test_an_optional_boolean_is_set_cleared_and_set_false_through_its_select(browser, tmp_path):
    # A checkbox has no "none": an optional boolean is a select of none,
    # true and false, so a page can clear it as the API can (null).
    app = make_app("memory://", collections=(NOTES,))
    server = serve(app)
    address = ("127.0.0.1", server.effective_port)
    base = f"http://127.0.0.1:{server.effective_port}"
    try:
        browser.get(base + "/notes")
        form = "form.record"
        pinned = Select(field(browser, form, "pinned"))
        assert [o.get_attribute("value") for o in pinned.options] == ["", "true", "false"]
        field(browser, form, "text").send_keys("Buy milk")
        pinned.select_by_value("true")
        browser.find_element(By.CSS_SELECTOR, f"{form} p.actions button").click()
        wait(browser, heading_is("Buy milk"))
        path = browser.current_url.removeprefix(base)
        assert json.loads(call(address, "GET", path)[2])["pinned"] is True

        for choice, kept in (("", None), ("false", False)):
            pinned = Select(field(browser, form, "pinned"))
            pinned.select_by_value(choice)
            browser.save_screenshot(str(tmp_path / f"note-pinned-{choice or 'none'}.png"))
            browser.find_element(By.CSS_SELECTOR, f"{form} p.actions button").click()
            wait(browser, lambda b: b.find_element(By.CSS_SELECTOR, ".flash").text == "Saved.")
            assert json.loads(call(address, "GET", path)[2]).get("pinned") is kept, choice
            browser.refresh()
            assert Select(field(browser, form, "pinned")).first_selected_option.get_attribute(
                "value") == choice
        assert chromium.faults(browser) == []
    finally:
        stop(server)
        app.close()


def test_a_read_while_chromium_replaces_the_document_is_waited_out():
    """A reload during a read once failed a full run ("Node with given id
    does not belong to the document", which selenium does not call stale):
    ``chromium.wait`` takes it as "not yet", and lets other faults through."""
    from selenium.common.exceptions import WebDriverException
    said = iter([WebDriverException("unknown error: Node with given id does not belong to "
                                    "the document"), "found"])

    def condition(_):
        answer = next(said)
        if isinstance(answer, Exception):
            raise answer
        return answer
    assert chromium.wait(None, condition, timeout=5) == "found"
    with pytest.raises(WebDriverException, match="chrome not reachable"):
        chromium.wait(None, lambda _: (_ for _ in ()).throw(
            WebDriverException("chrome not reachable")), timeout=5)


def _titles(driver):
    return [row.text
            for row in driver.find_elements(By.CSS_SELECTOR, "table tbody td:nth-child(2)")]


def test_a_person_asks_by_links_and_forms_without_script(service, tmp_path):
    """The collection page's "Find" section, in a browser that runs no
    script: a filter's values and the orders are links, the other
    conditions small GET forms; each keeps what was asked before, and a
    condition asked is taken away by its link."""
    base, address = service
    tasks = [("Apples", False, "low"), ("Bread", True, "high"), ("Cheese", False, "high"),
             ("Dates", False, "normal"), ("Eggs", True, "low"), ("Figs", False, "high")]
    for title, done, priority in tasks:
        status, _, _ = call(address, "POST", "/tasks", {"title": title, "done": done,
                                                         "priority": priority})
        assert status == 201
    driver = chromium.start(script=False)       # (Chromium's setting: no page's script runs)
    try:
        driver.get(base + "/tasks")
        find = "section.find"
        driver.find_element(
            By.XPATH, "//p[@class='choices'][span='done']/a[text()='false']").click()
        wait(driver, lambda d: _titles(d) == ["Apples", "Cheese", "Dates", "Figs"])
        driver.find_element(
            By.XPATH, "//p[@class='choices'][span='sort']/a[text()='-title']").click()
        wait(driver, lambda d: _titles(d) == ["Figs", "Dates", "Cheese", "Apples"])
        driver.find_element(By.CSS_SELECTOR, f"{find} details summary").click()
        form = driver.find_element(
            By.XPATH, "//form[@class='condition'][.//input[@name='title[gte]']]")
        form.find_element(By.NAME, "title[gte]").send_keys("c")
        form.find_element(By.TAG_NAME, "button").click()
        wait(driver, lambda d: _titles(d) == ["Figs", "Dates", "Cheese"])
        assert "done=false" in driver.current_url and "sort=-title" in driver.current_url
        driver.find_element(By.CSS_SELECTOR, f"{find} details summary").click()    # (a new page)
        form = driver.find_element(
            By.XPATH, "//form[@class='condition'][.//select[@name='priority[gte]']]")
        Select(form.find_element(By.NAME, "priority[gte]")).select_by_visible_text("high")
        form.find_element(By.TAG_NAME, "button").click()
        wait(driver, lambda d: _titles(d) == ["Figs", "Cheese"])
        driver.save_screenshot(str(tmp_path / "find.png"))
        driver.find_element(
            By.XPATH, "//span[@class='condition'][starts-with(., 'priority[gte]')]/a").click()
        wait(driver, lambda d: _titles(d) == ["Figs", "Dates", "Cheese"])
        driver.find_element(
            By.XPATH, "//span[@class='condition'][starts-with(., 'done = false')]/a").click()
        wait(driver, lambda d: _titles(d) == ["Figs", "Eggs", "Dates", "Cheese"])
        assert "done" not in driver.current_url and "sort=-title" in driver.current_url
    finally:
        driver.quit()


def test_a_table_of_many_columns_uses_a_wide_screens_width(service, browser, tmp_path):
    """At 1600 px a task's eleven columns are not squeezed into the text's
    60rem column (a title on three lines, created and updated behind a
    scroll bar): the table is as wide as its columns want, up to the
    window's, with nothing to scroll; on a phone it scrolls in its own box,
    the page not at all; a table of few columns fills the text's column."""
    base, address = service
    for n in range(3):
        status, _, _ = call(address, "POST", "/tasks", {
            "title": f"Write the release notes for version {n}", "done": False,
            "estimate": 2.5, "due": "2026-12-01", "remind_at": "2026-11-30T08:00:00Z",
            "priority": "high", "link": "https://example.org/notes/release"})
        assert status == 201
    measure = """const box = document.querySelector(".table");
        const main = document.querySelector("main").getBoundingClientRect();
        const rect = box.getBoundingClientRect();
        return {scrolls: box.scrollWidth > box.clientWidth, left: rect.left, right: rect.right,
                width: rect.width, window: document.documentElement.clientWidth,
                page_scrolls: document.documentElement.scrollWidth
                              > document.documentElement.clientWidth,
                main: main.width - 32};         // (main's width less its padding)"""
    try:
        browser.set_window_size(1600, 900)
        browser.get(base + "/tasks")
        wide = browser.execute_script(measure)
        browser.save_screenshot(str(tmp_path / "tasks-1600.png"))
        assert not wide["scrolls"] and not wide["page_scrolls"], wide
        assert wide["width"] > 0.8 * wide["window"], wide
        assert wide["left"] >= 0 and wide["right"] <= wide["window"], wide
        browser.get(base + "/users")
        few = browser.execute_script(measure)
        assert abs(few["width"] - few["main"]) < 1, few
        browser.set_window_size(400, 800)
        browser.get(base + "/tasks")
        narrow = browser.execute_script(measure)
        assert narrow["scrolls"] and not narrow["page_scrolls"], narrow
        assert narrow["left"] >= 0 and narrow["right"] <= narrow["window"], narrow
    finally:
        browser.set_window_size(1200, 900)
