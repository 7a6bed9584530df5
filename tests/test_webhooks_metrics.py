"""The webhooks feature in the metrics (issue 60, "Seen";
usersvc/features/metrics/webhooks.py): attempts by outcome
(``usersvc_webhook_deliveries_total``) and each subscription's lag
(``usersvc_webhook_lag``), from real deliveries to a real receiver
(tests/test_webhooks.py's), scraped with ``prometheus_client``'s own
parser; in one process, and counted in files (``metrics_dir``) by a
process that has ended; and never a secret or a URL in a scrape.
"""
from __future__ import annotations

import json
import socket
import subprocess
import sys
from typing import Any

import pytest
import test_webhooks
from helpers import ROOT
from test_webhooks import DEADLINE, FEATURES, create, served, state, subscribe, until

pytest.importorskip("prometheus_client", reason="pip install -e '.[metrics]'")
from prometheus_client import generate_latest  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402
from webob import Request  # noqa: E402

from usersvc import DEFAULT_FEATURES, make_app  # noqa: E402

DELIVERIES = "usersvc_webhook_deliveries_total"
LAG = "usersvc_webhook_lag"


receiver = test_webhooks.receiver      # (the fixture: a receiver, closed after)


def scrape(app: Any) -> tuple[str, dict[str, float], dict[str, float]]:
    """The scrape's text, its deliveries by outcome, its lag by subscription."""
    text = generate_latest(app.plugged["metrics"].registry).decode()
    outcomes: dict[str, float] = {}
    lags: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == DELIVERIES:
                outcomes[sample.labels["outcome"]] = sample.value
            elif sample.name == LAG:
                lags[sample.labels["subscription"]] = sample.value
    return text, outcomes, lags


def nobody_listening() -> str:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{unused.getsockname()[1]}/nobody"


def test_attempts_are_counted_by_outcome_and_each_subscriptions_lag_shown(store_url, receiver):
    """Four subscriptions, one change: one receiver acknowledges it, one
    fails twice (500) and then acknowledges, one answers 410, and nobody
    listens at the last (refused, refused, refused: disabled). Each attempt
    is counted once, under its outcome; a subscription disabled falls
    behind by what changes after, and catches up once turned on again. No
    URL nor secret is in any scrape."""
    flaky: list[str] = []       # (every subscription's message has the same webhook-id)

    def answer(delivery, before):
        if delivery.path == "/flaky":
            flaky.append(delivery.id)
        return ((410, {}) if delivery.path == "/gone" else
                (500, {}) if delivery.path == "/flaky" and len(flaky) <= 2 else (200, {}))
    receiver.answer = answer

    def acknowledged() -> int:
        """The deliveries answered 2xx: at /ok, and at /flaky past its two 500s."""
        return len([d for d in receiver.deliveries if d.path in ("/ok", "/flaky")]) - 2
    with served(store_url, metrics=True) as client:
        _, outcomes, lags = scrape(client.app)
        assert outcomes == {"delivered": 0, "failed": 0, "gone": 0, "exhausted": 0}
        assert lags == {}
        made = {name: subscribe(client, url) for name, url in (
            ("ok", receiver.url("/ok")), ("flaky", receiver.url("/flaky")),
            ("gone", receiver.url("/gone")), ("nobody", nobody_listening()))}
        ids = {name: str(s["id"]) for name, s in made.items()}
        assert scrape(client.app)[2] == dict.fromkeys(ids.values(), 0)
        create(client, 1)
        for name in ("ok", "flaky"):
            until(lambda name=name: state(client, made[name])["delivered"] == {"users": 1},
                  f"{name}: delivered")
        for name in ("gone", "nobody"):
            until(lambda name=name: not state(client, made[name])["enabled"], f"{name}: disabled")
        text, outcomes, lags = scrape(client.app)
        assert outcomes == {"delivered": 2, "failed": 4, "gone": 1, "exhausted": 1}
        assert lags == {ids["ok"]: 0, ids["flaky"]: 0, ids["gone"]: 1, ids["nobody"]: 1}
        # Disabled, they fall behind by every position changed since (a
        # record changed twice: two positions); turned on again at another
        # URL, one catches up.
        user = create(client, 2)
        assert client.patch(f"/users/{user['id']}", json_body={"name": "Renamed"}
                            ).status_code == 200
        for name in ("ok", "flaky"):
            until(lambda name=name: state(client, made[name])["delivered"] == {"users": 3},
                  f"{name}: delivered")
        text, outcomes, lags = scrape(client.app)
        assert lags == {ids["ok"]: 0, ids["flaky"]: 0, ids["gone"]: 3, ids["nobody"]: 3}
        assert outcomes["delivered"] == acknowledged()
        back = client.patch(f"/webhooks/{made['gone']['id']}",
                            json_body={"url": receiver.url("/ok"), "enabled": True})
        assert back.status_code == 200
        until(lambda: state(client, made["gone"])["delivered"] == {"users": 3}, "caught up")
        text, outcomes, lags = scrape(client.app)
        assert lags == {ids["ok"]: 0, ids["flaky"]: 0, ids["gone"]: 0, ids["nobody"]: 3}
        assert outcomes == {"delivered": acknowledged(), "failed": 4, "gone": 1, "exhausted": 1}
        assert client.delete(f"/webhooks/{made['nobody']['id']}").status_code == 204
        text, _, lags = scrape(client.app)
        assert ids["nobody"] not in lags
        for subscription in made.values():
            assert subscription["secret"] not in text
            assert subscription["url"] not in text
            assert subscription["secret"].removeprefix("whsec_") not in text


def test_without_the_webhooks_feature_the_scrape_has_no_webhook_metrics():
    without = tuple(name for name in DEFAULT_FEATURES if name != "webhooks")
    app = make_app("memory://", features=without, metrics=True)
    try:
        Request.blank("/users").get_response(app)
        text = generate_latest(app.plugged["metrics"].registry).decode()
    finally:
        app.close()
    assert "usersvc_webhook" not in text


#: A process that subscribes the receiver to a SQLite file's users,
#: writes two users, waits until both are delivered, and ends: its
#: attempts counted in the metrics files it shares (``metrics_dir``).
WORKER = """
import json, sys, threading, time
from webob import Request
from usersvc import build_app
from usersvc.settings import Settings
path, directory, url, features = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
app = build_app(Settings(f"sqlite:///{path}", features=tuple(features), metrics_dir=directory,
                         own={"webhooks_allow_private": True, "webhooks_retries": "0.05,0.1"}))
def send(method, target, body=None):
    request = Request.blank(target, method=method)
    if body is not None:
        request.body, request.content_type = json.dumps(body).encode(), "application/json"
    return request.get_response(app)
made = send("POST", "/webhooks", {"url": url}).json
for n in range(2):
    send("POST", "/users", {"name": f"User {n}", "email": f"user{n}@example.org"})
end = time.monotonic() + 20
while send("GET", f"/webhooks/{made['id']}").json["delivered"] != {"users": 2}:
    assert time.monotonic() < end, "not delivered"
    threading.Event().wait(0.02)
app.stop_waiting()
app.close()
print(json.dumps(made))
"""


def test_counted_in_files_attempts_of_a_process_that_ended_stay_counted(tmp_path, receiver):
    """With ``metrics_dir`` (several processes of a server counting
    together): the attempts a process made are counted in its files and
    kept after it ends; another process's scrape adds its own to them, and
    reads every subscription's lag from the store (not added up over the
    processes: each would tell the same)."""
    path, directory = tmp_path / "users.db", tmp_path / "metrics"
    directory.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", WORKER, str(path), str(directory), receiver.url(),
         json.dumps(FEATURES)], capture_output=True, text=True, timeout=DEADLINE * 3,
        cwd=tmp_path, env={"PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    made = json.loads(done.stdout)
    assert len(receiver.deliveries) == 2
    with served(f"sqlite:///{path}", metrics_dir=str(directory)) as client:
        text, outcomes, lags = scrape(client.app)
        assert outcomes == {"delivered": 2, "failed": 0, "gone": 0, "exhausted": 0}
        assert lags == {str(made["id"]): 0}
        create(client, 3)
        until(lambda: state(client, made)["delivered"] == {"users": 3}, "delivered here")
        text, outcomes, lags = scrape(client.app)
        assert outcomes["delivered"] == 3 and lags == {str(made["id"]): 0}
        assert made["secret"] not in text and made["url"] not in text
