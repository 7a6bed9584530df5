"""Metrics for Prometheus: what ``/metrics`` says after known requests, read
with ``prometheus_client``'s own parser, in-process on every store and
from real ``serve.py`` processes (docs/deploying.md, "Metrics")."""
from __future__ import annotations

import gc
import http.client
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from conftest import Client
from helpers import ROOT, Listener, Served, call

pytest.importorskip("prometheus_client", reason="pip install -e '.[metrics]'")
from prometheus_client import generate_latest  # noqa: E402
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402
from webob import Request  # noqa: E402

import usersvc  # noqa: E402
from usersvc import DEFAULT_FEATURES, Mount, make_app  # noqa: E402
from usersvc.storage import open_store  # noqa: E402

DURATION = "http_server_request_duration_seconds"
OPERATIONS = "usersvc_store_operation_duration_seconds"
ADA = {"name": "Ada Lovelace", "email": "ada.secret@example.org"}
#: What a known run of requests leaves in its labels, and nothing more.
ROUTES = {"/", "/openapi.json", "/healthz", "/users", "/users/{id}", "/users/changes", ""}
OPERATION_NAMES = ("get", "list", "count", "create", "update", "delete", "changes")


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of an exposition: {(name, labels): value}."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def scraped(app) -> tuple[str, dict[tuple[str, frozenset], float]]:
    text = generate_latest(app.plugged["metrics"].registry).decode()
    return text, samples(text)


def requests(found, method, route, status) -> float:
    return found.get((DURATION + "_count", frozenset({
        "http_request_method": method, "http_route": route,
        "http_response_status_code": str(status)}.items())), 0)


def operations(found, operation, collection="users") -> float:
    return found.get((OPERATIONS + "_count", frozenset(
        {"collection": collection, "operation": operation}.items())), 0)


@pytest.fixture
def metered(storage):
    return make_app(storage, metrics=True)


def test_requests_are_counted_by_method_route_and_status_and_nothing_personal(metered):
    client = Client(metered)
    created = client.request("POST", "/users", json_body=ADA)
    assert created.status_int == 201
    path = created.headers["Location"].removeprefix("http://localhost")
    user_id = path.rsplit("/", 1)[1]
    tag = created.headers["ETag"]
    client.request("GET", path)
    client.request("GET", path)
    client.request("HEAD", path)
    client.request("GET", path, headers={"If-None-Match": tag})                 # 304
    client.request("PUT", path, json_body={**ADA, "name": "Ada King"},
                   headers={"If-Match": '"stale"'})                              # 412
    client.request("GET", "/users?q=ada.secret&email=ada.secret@example.org&limit=5")
    client.request("GET", "/users/987654321")                                    # 404, a route
    client.request("GET", "/ada.secret@example.org/nowhere")                     # 404, no route
    client.request("DELETE", "/users")                                           # 405
    client.request("BREW", "/users")                                             # an unknown method
    client.request("OPTIONS", path)
    client.request("GET", "/users/changes?after=0")
    client.request("DELETE", path)

    text, found = scraped(metered)
    assert requests(found, "POST", "/users", 201) == 1
    assert requests(found, "GET", "/users/{id}", 200) == 2
    assert requests(found, "HEAD", "/users/{id}", 200) == 1
    assert requests(found, "GET", "/users/{id}", 304) == 1
    assert requests(found, "PUT", "/users/{id}", 412) == 1
    assert requests(found, "GET", "/users", 200) == 1
    assert requests(found, "GET", "/users/{id}", 404) == 1
    assert requests(found, "GET", "", 404) == 1             # no route: one fixed, empty value
    assert requests(found, "DELETE", "/users", 405) == 1
    assert requests(found, "_OTHER", "/users", 405) == 1    # never the client's own word
    assert requests(found, "OPTIONS", "/users/{id}", 204) == 1
    assert requests(found, "GET", "/users/changes", 200) == 1
    assert requests(found, "DELETE", "/users/{id}", 204) == 1
    # Every request once, each in one bucket of its histogram, and the
    # buckets cumulative up to +Inf, which is the count.
    counts = {k: v for k, v in found.items() if k[0] == DURATION + "_count"}
    assert sum(counts.values()) == 14
    for (_, labels), count in counts.items():
        assert found[(DURATION + "_bucket", labels | {("le", "+Inf")})] == count
        buckets = sorted((float(dict(pairs)["le"]), v) for (n, pairs), v in found.items()
                         if n == DURATION + "_bucket"
                         and pairs - {("le", dict(pairs)["le"])} == labels)
        assert [v for _, v in buckets] == sorted(v for _, v in buckets)
        assert found[(DURATION + "_sum", labels)] > 0
    assert {dict(labels)["http_route"] for (_, labels) in counts} <= ROUTES
    # The store's operations: the POST's create, five reads of one (GET,
    # HEAD, the conditional GET, the 404), the page, the PUT's update (its
    # precondition is the store's to check), the feed, the DELETE.
    assert operations(found, "create") == 1
    assert operations(found, "get") == 5
    assert operations(found, "update") == 1
    assert operations(found, "list") == 1
    assert operations(found, "changes") == 1
    assert operations(found, "delete") == 1
    assert found[("http_server_active_requests", frozenset(
        {"http_request_method": "GET"}.items()))] == 0
    # Nothing a client sent reaches a label: every value of every label is
    # one of a fixed few, and no name, e-mail, id, query or 404's path is
    # anywhere in the text.
    allowed = {"http_request_method": {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS",
                                       "_OTHER"},
               "http_route": ROUTES,
               "collection": {"users"}, "operation": set(OPERATION_NAMES)}
    for (name, labels), _ in found.items():
        for label, value in labels:
            if label in allowed:
                assert value in allowed[label], (name, label, value)
            elif label == "http_response_status_code":
                assert value.isdigit() and len(value) == 3
    for secret in ("ada.secret", "Ada", "Lovelace", "987654321", "nowhere", "limit=5", "q=",
                   "BREW", f"/users/{user_id}"):
        assert secret not in text, secret


def test_the_registry_also_holds_the_release_and_the_process(metered):
    _, found = scraped(metered)
    assert found[("usersvc_build_info", frozenset({"version": usersvc.__version__}.items()))] == 1
    assert found[("process_resident_memory_bytes", frozenset())] > 0
    assert any(name == "python_gc_collections_total" for name, _ in found)
    assert found[("usersvc_feed_waiting_requests", frozenset())] == 0
    assert found[("usersvc_feed_waiting_requests_limit", frozenset())] == 2


@pytest.mark.parametrize("counted", ["in memory", "in files"])
def test_an_open_stream_is_a_stream_and_a_waiting_request_until_it_ends(counted, tmp_path):
    from usersvc import Settings, build_app
    app = build_app(Settings("memory://", metrics=True, stream_seconds=60,
                             metrics_dir=str(tmp_path) if counted == "in files" else None))
    streams = ("usersvc_feed_streams", frozenset())
    waiting = ("usersvc_feed_waiting_requests", frozenset())
    Client(app).request("GET", "/users")        # (a process's gauges begin with its first request)
    assert [scraped(app)[1][k] for k in (streams, waiting)] == [0, 0]
    stream = Listener(app)
    stream.next()
    assert [scraped(app)[1][k] for k in (streams, waiting)] == [1, 1]
    app.stop_waiting()
    stream.end()
    assert [scraped(app)[1][k] for k in (streams, waiting)] == [0, 0]
    app.close()


def test_two_apps_in_one_process_keep_their_own_counts(storage):
    one, two = make_app(storage, metrics=True), make_app(storage, metrics=True)
    for _ in range(3):
        Client(one).request("GET", "/users")
    Client(two).request("GET", "/users")
    assert requests(scraped(one)[1], "GET", "/users", 200) == 3
    assert requests(scraped(two)[1], "GET", "/users", 200) == 1
    assert make_app(storage).plugged["metrics"] is None     # off unless asked for


def test_app_metrics_is_what_the_feature_plugged_in_and_deprecated(storage):
    """The registry comes out through what the feature plugged in
    (``app.plugged``), not an attribute of the core's; ``app.metrics``, which
    make_app's text named, still answers, for this release, with a warning."""
    app = make_app(storage, metrics=True)
    assert "metrics" not in vars(app)
    with pytest.warns(DeprecationWarning, match=r'app\.metrics is deprecated: use app\.plugged'):
        assert app.metrics is app.plugged["metrics"]
    assert requests(scraped(app)[1], "GET", "/users", 200) == 0
    with pytest.warns(DeprecationWarning):
        assert make_app(storage).metrics is None


def test_requests_on_many_threads_are_each_counted_once(metered):
    threads, each = 4, 100
    barrier = threading.Barrier(threads)

    def run():
        client = Client(metered)
        barrier.wait()
        for _ in range(each):
            assert client.request("GET", "/users/1").status_int == 404

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    _, found = scraped(metered)
    assert requests(found, "GET", "/users/{id}", 404) == threads * each
    assert operations(found, "get") == threads * each


def test_a_server_that_starts_a_thread_a_request_keeps_its_counts_not_its_threads(metered):
    """A thread's counts outlive it, added to those of the threads before
    it, and it leaves nothing else behind: 100 requests, each on a thread
    of its own, are 100 counts in a handful of parts."""
    for _ in range(100):
        worker = threading.Thread(target=lambda: Client(metered).request("GET", "/users/1"))
        worker.start()
        worker.join()
    gc.collect()
    _, found = scraped(metered)
    assert requests(found, "GET", "/users/{id}", 404) == 100
    assert operations(found, "get") == 100
    # the ended threads', this one's, maybe the last
    assert metered.plugged["metrics"]._parts.read(len) <= 3


def test_a_request_waiting_for_changes_is_active_and_waiting(metered):
    client = Client(metered)
    answered = []
    waiter = threading.Thread(target=lambda: answered.append(
        client.request("GET", "/users/changes?after=0&wait=20")))
    waiter.start()
    waiting = ("usersvc_feed_waiting_requests", frozenset())
    active = ("http_server_active_requests",
              frozenset({"http_request_method": "GET"}.items()))
    found = {}
    for _ in range(2000):          # until it waits (each scrape takes a few ms)
        _, found = scraped(metered)
        if found.get(waiting) == 1:
            break
    assert found[waiting] == 1 and found[active] == 1
    assert client.request("POST", "/users", json_body=ADA).status_int == 201    # wakes it
    waiter.join(timeout=20)
    assert answered and answered[0].status_int == 200
    _, found = scraped(metered)
    assert found[waiting] == 0 and found[active] == 0
    assert requests(found, "GET", "/users/changes", 200) == 1


def test_a_mounted_app_labels_its_routes_with_its_root_and_other_paths_as_unrouted(storage):
    app = make_app(storage, metrics=True)
    client = Client(Mount("/v1", app))
    assert client.request("GET", "/v1/users").status_int == 200
    assert client.request("GET", "/users").status_int == 404
    _, found = scraped(app)
    # The application's root, then the template.
    assert requests(found, "GET", "/v1/users", 200) == 1
    assert requests(found, "GET", "", 404) == 1


def test_a_refused_token_or_cross_origin_write_is_labelled_with_its_route(storage):
    app = make_app(storage, metrics=True, tokens={"s3cret-token-of-32-characters-xx": "write"})
    client = Client(app)
    assert client.request("GET", "/users/7").status_int == 401
    assert client.request("POST", "/users", json_body=ADA, headers={
        "Sec-Fetch-Site": "cross-site", "Origin": "https://elsewhere.example"}).status_int == 403
    assert client.request("GET", "/nothing/here").status_int == 401
    _, found = scraped(app)
    assert requests(found, "GET", "/users/{id}", 401) == 1
    assert requests(found, "POST", "/users", 403) == 1
    assert requests(found, "GET", "", 401) == 1


def test_sqlite_commits_are_counted_with_their_writes(tmp_path):
    app = make_app(f"sqlite:///{tmp_path}/users.db", metrics=True)
    try:
        _, found = scraped(app)
        assert found[("usersvc_sqlite_commit_duration_seconds_count", frozenset())] == 0
        client = Client(app)
        for i in range(5):
            client.request("POST", "/users", json_body={"name": "N", "email": f"n{i}@x.org"})
        client.request("POST", "/users", json_body={"name": "N", "email": "n0@x.org"})  # 409
        _, found = scraped(app)
        # Each request waited for its commit, so each write had one of its own.
        assert found[("usersvc_sqlite_commit_duration_seconds_count", frozenset())] == 6
        assert found[("usersvc_sqlite_commit_writes_sum", frozenset())] == 6
        assert found[("usersvc_sqlite_commit_writes_bucket", frozenset({("le", "1.0")}))] == 6
        assert found[("usersvc_sqlite_commit_duration_seconds_sum", frozenset())] > 0
    finally:
        app.close()


def test_postgres_pool_use_is_reported(postgres_url):
    storage = open_store(postgres_url)
    try:
        app = make_app(storage, metrics=True)
        Client(app).request("GET", "/users")
        _, found = scraped(app)
        assert found[("usersvc_postgres_pool_connections", frozenset())] >= 1
        assert found[("usersvc_postgres_pool_connections_in_use", frozenset())] == 0
        assert found[("usersvc_postgres_pool_connections_max", frozenset())] >= 1
        assert found[("usersvc_postgres_pool_requests_waiting", frozenset())] == 0
        assert "usersvc_sqlite" not in generate_latest(app.plugged["metrics"].registry).decode()
    finally:
        storage.close()


# -- serve.py --metrics-port ----------------------------------------------------

def scrape(address, accept=None) -> tuple[int, http.client.HTTPMessage, str]:
    status, headers, body = call(address, "GET", "/metrics",
                                 headers={"Accept": accept} if accept else None)
    return status, headers, body.decode()


def test_serve_py_serves_metrics_on_a_port_of_its_own(tmp_path):
    served = Served("--storage", f"sqlite:///{tmp_path}/users.db", "--metrics-port", "0",
                    cwd=tmp_path)
    try:
        assert served.metrics_address and served.metrics_address != served.address
        assert call(served.address, "POST", "/users", ADA)[0] == 201
        assert call(served.address, "GET", "/users/1")[0] == 200
        status, headers, text = scrape(served.metrics_address)
        assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
        found = samples(text)
        assert requests(found, "POST", "/users", 201) == 1
        assert requests(found, "GET", "/users/{id}", 200) == 1
        assert found[("usersvc_sqlite_commit_duration_seconds_count", frozenset())] == 1
        assert found[("process_open_fds", frozenset())] > 0
        # OpenMetrics, to a scraper that asks for it.
        status, headers, text = scrape(served.metrics_address,
                                       "application/openmetrics-text; version=1.0.0")
        assert headers["Content-Type"].startswith("application/openmetrics-text")
        assert text.endswith("# EOF\n")
        families = {f.name: f for f in openmetrics(text)}
        assert families[DURATION].type == "histogram"
        # The service's own port has no /metrics, and the metrics port nothing else.
        assert call(served.address, "GET", "/metrics")[0] == 404
        assert call(served.metrics_address, "GET", "/users")[0] == 404
    finally:
        assert served.stop() == 0


def test_two_serve_py_processes_are_each_scraped_and_add_up(tmp_path):
    """Several processes behind one address (docs/deploying.md): each has
    its own metrics port, the scrape config lists them all, and PromQL's
    sum() adds them; here, the sum of the two scrapes is every request."""
    served = [Served("--storage", f"sqlite:///{tmp_path}/users.db", "--metrics-port", "0",
                     cwd=tmp_path) for _ in range(2)]
    try:
        for i in range(10):
            assert call(served[0 if i < 7 else 1].address, "POST", "/users",
                        {"name": "N", "email": f"n{i}@x.org"})[0] == 201
        per_process = [requests(samples(scrape(s.metrics_address)[2]), "POST", "/users", 201)
                       for s in served]
        assert per_process == [7, 3]
    finally:
        for s in served:
            assert s.stop() == 0


def test_metrics_mistakes_at_start_up_are_one_line(tmp_path):
    def start(*args, prelude=""):
        return subprocess.run(
            [sys.executable, "-c", prelude + "import sys; from usersvc.serving.server import main; "
             f"sys.exit(main({list(args)!r}))"],
            cwd=tmp_path, capture_output=True, text=True, timeout=60)

    # Without prometheus_client (the metrics extra not installed).
    missing = start("--storage", "memory://", "--port", "0", "--metrics-port", "0",
                    prelude="import sys; sys.modules['prometheus_client'] = None; ")
    assert missing.returncode == 2
    assert missing.stderr == ("usersvc: --metrics-port needs prometheus_client: "
                              f"pip install -e '.[metrics]' in {ROOT}\n")
    # A port in use (another server's), and a host that is not this machine's.
    other = Served("--storage", "memory://", cwd=tmp_path)
    try:
        port = other.address[1]
        taken = start("--storage", "memory://", "--port", "0", "--metrics-port", str(port))
        assert (taken.returncode, taken.stderr) == (
            2, f"usersvc: cannot serve metrics on 127.0.0.1 port {port}: Address already in use\n")
    finally:
        assert other.stop() == 0
    elsewhere = start("--storage", "memory://", "--port", "0", "--metrics-port", "0",
                      "--metrics-host", "192.0.2.1")
    assert elsewhere.returncode == 2
    assert elsewhere.stderr.startswith("usersvc: cannot serve metrics on 192.0.2.1 port 0: ")
    assert elsewhere.stderr.count("\n") == 1
    wrong = start("--metrics-port", "70000")
    assert wrong.returncode == 2 and "--metrics-port must be from 0 to 65535" in wrong.stderr
    alone = start("--storage", "memory://", "--metrics-host", "0.0.0.0")
    assert alone.returncode == 2
    assert alone.stderr.endswith("error: --metrics-host needs --metrics-port "
                                 "(the port metrics are served on)\n")


def test_metrics_open_to_every_address_are_warned_of(tmp_path):
    served = Served("--storage", "memory://", "--metrics-port", "0", "--metrics-host", "0.0.0.0",
                    cwd=tmp_path)
    assert served.stop() == 0
    assert "WARNING usersvc: serving metrics on 0.0.0.0: anyone who can reach this address " \
           "can read them" in served.log()


def test_version_is_the_package_metadatas():
    from importlib.metadata import version
    expected = f"usersvc {version('usersvc')}\n"
    for command in ([sys.executable, str(ROOT / "serve.py"), "--version"],
                    [str(Path(sys.executable).parent / "usersvc"), "--version"]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stdout, done.stderr) == (0, expected, "")


def test_the_version_is_one_value_everywhere_and_this_release_is_not_0_1_0():
    from importlib.metadata import version

    from usersvc.features.openapi.document import openapi
    this = version("usersvc")
    assert this != "0.1.0"                      # 0.1.0 cannot open this release's databases
    assert usersvc.__version__ == this == openapi((usersvc.USER,))["info"]["version"]
    assert f"\n## {this}\n" in (ROOT / "CHANGELOG.md").read_text()


def test_the_openapi_description_names_the_collections_served():
    from books import BOOKS

    from usersvc.features.openapi.document import openapi
    assert openapi((usersvc.USER,))["info"]["description"].startswith("The collection users, in")
    assert openapi((usersvc.USER, BOOKS))["info"]["description"].startswith(
        "The collections users and books, in")


# -- docs/deploying.md, "Metrics for Prometheus" -------------------------------

def deploying_metrics_section() -> str:
    text = (ROOT / "docs" / "deploying.md").read_text()
    return text.split("## Metrics for Prometheus", 1)[1].split("\n## ", 1)[0]


def blocks(section: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def test_the_documented_metrics_queries_and_alert_name_what_a_scrape_holds(tmp_path):
    """Every metric and label the section's table, queries and alert name is
    in a real scrape (of a SQLite app, after a write): the page cannot name
    one that does not exist, or one that has been renamed."""
    app = make_app(f"sqlite:///{tmp_path}/users.db", metrics=True,   # (webhooks' too: one
                   features=(*DEFAULT_FEATURES, "webhooks"),          # subscription, its lag)
                   webhooks_allow_private=True)
    try:
        Client(app).request("POST", "/webhooks", json_body={"url": "http://127.0.0.1:9/"})
        Client(app).request("POST", "/users", json_body=ADA)
        found = samples(generate_latest(app.plugged["metrics"].registry).decode())
    finally:
        app.close()
    pool = samples(_pool_metrics_text())
    labels_of: dict[str, set[str]] = {}
    for name, labels in [*found, *pool]:
        labels_of.setdefault(name, set()).update(label for label, _ in labels)
    section = deploying_metrics_section()
    named = set(re.findall(r"`((?:http_server|usersvc)_\w+)`", section))
    queries = blocks(section, "promql")
    configs = [yaml.safe_load(block) for block in blocks(section, "yaml")]
    assert len(queries) == 3 and len(configs) == 3      # processes, the alert, workers
    alert = configs[1]["groups"][0]["rules"][0]
    for query in [*queries, alert["expr"]]:
        used = set(re.findall(r"\b((?:http_server|usersvc)_\w+)", query))
        assert used, query
        named |= used
        for name in used:
            grouped = set(re.findall(r"by \(([^)]*)\)", query))
            matched = set(re.findall(r"(\w+)=~?\"", query))
            for label in {word.strip() for g in grouped for word in g.split(",")} | matched:
                if label not in ("instance",):          # Prometheus's own, added at the scrape
                    assert label in labels_of[name], (query, name, label)
    for name in named:
        assert name in labels_of or name + "_count" in labels_of, name
    for config in configs[0], configs[2]:
        assert config["scrape_configs"][0]["static_configs"][0]["targets"]
    assert alert["alert"] and alert["for"] and alert["annotations"]["summary"]


def _pool_metrics_text() -> str:
    """The PostgreSQL pool's gauges, from a store double whose pool is
    known (the real one is tested in test_postgres_pool_use_is_reported)."""
    from usersvc.storage.postgres.store import PoolUse

    class Storage:
        def pool_use(self):
            return PoolUse(size=2, in_use=1, max=8, waiting=0)

    class Records:
        storage = Storage()

    from usersvc.features.metrics.prometheus import Metrics
    from usersvc.features.waiting import Slots
    metrics = Metrics(usersvc.__version__, [Records()], Slots(2))
    return generate_latest(metrics.registry).decode()


def test_the_documented_embedding_serves_the_apps_registry(storage):
    snippet = blocks(deploying_metrics_section(), "python")[0]
    app = make_app(storage, metrics=True)
    Client(app).request("GET", "/users")
    scope = {"app": app}
    exec(snippet, scope)
    answer = Request.blank("/metrics").get_response(scope["metrics_app"])
    assert answer.status_int == 200
    assert requests(samples(answer.text), "GET", "/users", 200) == 1


# -- metrics_dir: counted in files (usersvc.features.metrics.shared) -------------------

def test_counted_in_files_threads_that_come_and_go_are_each_counted_once(tmp_path):
    """A server that starts a thread a request: each is counted once, and the
    threads that ended leave their series to the next (the file stays small)."""
    from usersvc import Settings, build_app
    app = build_app(Settings("memory://", metrics_dir=str(tmp_path)))
    try:
        client = Client(app)
        for i in range(100):
            thread = threading.Thread(target=client.request, args=("POST", "/users"),
                                      kwargs={"json_body": {"name": "N", "email": f"n{i}@x.org"}})
            thread.start()
            thread.join()
        found = samples(generate_latest(app.plugged["metrics"].registry).decode())
        assert requests(found, "POST", "/users", 201) == 100
        assert operations(found, "create") == 100
        assert _active_now(found) == 0
        series = list(tmp_path.glob("usersvc-*.series"))
        assert len(series) == 1 and len(series[0].read_text().splitlines()) <= 12
        # Many threads at once: every count kept.
        gc.collect()
        threads = [threading.Thread(target=lambda: [client.request("GET", "/users/1")
                                                    for _ in range(50)]) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        found = samples(generate_latest(app.plugged["metrics"].registry).decode())
        assert requests(found, "GET", "/users/{id}", 200) == 400
        assert operations(found, "get") == 400
    finally:
        app.close()


def _active_now(found) -> float:
    return sum(value for (name, _), value in found.items()
               if name == "http_server_active_requests")


def test_a_metrics_dir_that_cannot_be_written_is_refused(tmp_path):
    from usersvc import Settings
    with pytest.raises(ValueError, match="metrics_dir must be a directory usersvc can write "
                                         "to, not '.*nowhere'"):
        Settings("memory://", metrics_dir=str(tmp_path / "nowhere"))


def test_processes_that_ended_are_folded_into_one_file_and_keep_their_counts(tmp_path):
    """A server that replaces its workers (gunicorn's --max-requests): each
    worker that ended is added into usersvc-ended.json and its files go;
    its requests stay counted, scrape after scrape."""
    from usersvc import Settings, build_app
    worker = ("import sys; from usersvc import Settings, build_app; from webob import Request\n"
              "app = build_app(Settings('memory://', metrics_dir=sys.argv[1]))\n"
              "for _ in range(int(sys.argv[2])):\n"
              "    Request.blank('/users').get_response(app)\n")
    for n in (3, 4, 5):
        subprocess.run([sys.executable, "-c", worker, str(tmp_path), str(n)], check=True)
    assert len(list(tmp_path.glob("usersvc-*.series"))) == 3
    app = build_app(Settings("memory://", metrics_dir=str(tmp_path)))
    try:
        for _ in range(2):          # the second scrape finds them folded already
            found = samples(generate_latest(app.plugged["metrics"].registry).decode())
            assert requests(found, "GET", "/users", 200) == 12
            assert sorted(p.name for p in tmp_path.iterdir()) == ["usersvc-ended.json",
                                                                  "usersvc-ended.lock"]
        subprocess.run([sys.executable, "-c", worker, str(tmp_path), "6"], check=True)
        Client(app).request("GET", "/users")        # this process's own, alive
        found = samples(generate_latest(app.plugged["metrics"].registry).decode())
        assert requests(found, "GET", "/users", 200) == 12 + 6 + 1
        assert len(list(tmp_path.glob("usersvc-*.series"))) == 1      # this process's
        assert _active_now(found) == 0
    finally:
        app.close()


def test_a_worker_that_starts_during_a_scrape_is_not_folded_as_ended(tmp_path, monkeypatch):
    """A scrape lists the files, then folds the processes that ended: a
    worker whose files appeared in between was folded as ended, its files
    removed, and what it counted afterwards lost (1,950 of 2,000 counted
    with workers forked while scraping)."""
    from usersvc import Settings, build_app
    from usersvc.features.metrics import shared as metrics_shared
    worker = ("import sys; from usersvc import Settings, build_app; from webob import Request\n"
              "app = build_app(Settings('memory://', metrics_dir=sys.argv[1]))\n"
              "for _ in range(3):\n"
              "    Request.blank('/users').get_response(app)\n"
              "print('ready', flush=True); sys.stdin.readline()\n"
              "for _ in range(4):\n"
              "    Request.blank('/users').get_response(app)\n")
    subprocess.run([sys.executable, "-c", worker, str(tmp_path)], input="\n", text=True,
                   check=True, capture_output=True)        # one that ended: to fold
    late = subprocess.Popen([sys.executable, "-c", worker, str(tmp_path)], text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert late.stdout.readline() == "ready\n"
        listed = metrics_shared.files_in

        def before_it_started(directory):       # the listing a scrape made a moment earlier
            return [(pid, path) for pid, path in listed(directory) if pid != late.pid]
        monkeypatch.setattr(metrics_shared, "files_in", before_it_started)
        app = build_app(Settings("memory://", metrics_dir=str(tmp_path)))
        try:
            generate_latest(app.plugged["metrics"].registry)
            monkeypatch.setattr(metrics_shared, "files_in", listed)
            assert (tmp_path / f"usersvc-{late.pid}.series").exists()
            late.communicate("\n", timeout=60)
            found = samples(generate_latest(app.plugged["metrics"].registry).decode())
            assert requests(found, "GET", "/users", 200) == 7 + 7     # each worker's 3 and 4
        finally:
            app.close()
    finally:
        late.kill()
        late.communicate()
