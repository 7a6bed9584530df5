"""Metrics counted in files (``metrics_dir``): what a scrape makes of a
directory that holds a file not of ours (``usersvc.features.metrics.files``)."""
from __future__ import annotations

import pytest

pytest.importorskip("prometheus_client", reason="pip install -e '.[metrics]'")
from prometheus_client import make_wsgi_app  # noqa: E402
from test_metrics import requests, samples  # noqa: E402
from webob import Request  # noqa: E402

from usersvc import Settings, build_app  # noqa: E402


def test_a_series_file_of_another_name_is_not_a_process_and_the_scrape_answers(tmp_path):
    """``usersvc-*.series`` that names no process (a copy kept beside the
    others) was read as one, and every scrape failed on it (AttributeError:
    its name holds no pid); now it is passed over."""
    app = build_app(Settings("memory://", metrics_dir=str(tmp_path)))
    try:
        assert Request.blank("/users").get_response(app).status_int == 200
        (tmp_path / "usersvc-copy.series").write_text("")
        answer = Request.blank("/metrics").get_response(make_wsgi_app(
            app.plugged["metrics"].registry))
        assert answer.status_int == 200
        assert requests(samples(answer.text), "GET", "/users", 200) == 1
        assert (tmp_path / "usersvc-copy.series").exists()      # not ours to fold or remove
    finally:
        app.close()
