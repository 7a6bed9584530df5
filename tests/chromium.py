"""Debian's Chromium, driven by selenium through /usr/bin/chromedriver
(nothing is downloaded).

``require()`` skips the calling test module, saying why, where Chromium is
missing; ``.ci/run`` installs it and sets ``USERSVC_TEST_BROWSER_REQUIRED``,
which turns the skip into an error. The servers the browser reads are
``helpers.serve``'s.
"""
from __future__ import annotations

import os

import pytest

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
#: What a page's console must never hold: a blocked load or script, an error.
FAULTS = ("Content Security Policy", "Refused to", "Uncaught")
REQUIRED = os.environ.get("USERSVC_TEST_BROWSER_REQUIRED") == "1"


def require():
    if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
        reason = "Chromium is not installed (apt-get install chromium chromium-driver)"
        if REQUIRED:
            raise RuntimeError(f"browser tests are required here, but {reason}")
        pytest.skip(reason, allow_module_level=True)
    pytest.importorskip("selenium.webdriver", reason="pip install -e '.[test]'")


def faults(driver):
    """The console's messages since last asked that are ``FAULTS``."""
    return [e["message"] for e in driver.get_log("browser")
            if any(f in e["message"] for f in FAULTS)]


#: What Chromium says of an element read while its document is replaced
#: (a reload during the read): not a stale element to selenium, but as
#: much "not yet" (seen once in a full run).
_REPLACED = "does not belong to the document"


def wait(driver, condition, timeout=10):
    """Until ``condition`` holds (a page the script swaps in, or a reload,
    makes the old one's elements stale, or gone mid-read: that is not
    yet, not an error)."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    def holds(driver):
        try:
            return condition(driver)
        except StaleElementReferenceException:
            raise
        except WebDriverException as e:
            if _REPLACED in str(e):
                return False
            raise
    return WebDriverWait(driver, timeout, ignored_exceptions=(
        StaleElementReferenceException,)).until(holds)


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for a test module (``start``)."""
    driver = start()
    yield driver
    driver.quit()


def start(width=1200, height=900, script=True):
    """A headless Chromium that keeps its console (``get_log("browser")``);
    ``script=False``: one that runs no page's script."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 f"--window-size={width},{height}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if not script:
        options.add_experimental_option(
            "prefs", {"profile.managed_default_content_settings.javascript": 2})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_script_timeout(30)
    return driver
