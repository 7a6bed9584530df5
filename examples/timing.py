"""A feature of your own: ``Server-Timing`` on every answer (W3C Server
Timing), how long the app took, for a browser's developer tools.

    from usersvc import DEFAULT_FEATURES, make_app
    from examples.timing import ServerTiming
    app = make_app("sqlite:///users.db", features=DEFAULT_FEATURES + (ServerTiming(),))

or ``serve.py --features default,examples.timing:TIMING``. It plugs into two
of the hooks ``usersvc.hooks`` lists: a starter notes when a request began,
a finisher adds the header to its answer, a problem's too.
"""
from time import perf_counter

_STARTED = "examples.timing.started"    # in the request's environ: each request its own


class ServerTiming:
    """``Server-Timing: app;dur=1.234`` (milliseconds) on every answer."""

    name = "server-timing"

    def plug(self, app, storage, plugged):
        app.starters.append(self.start)
        app.finishers.append(self.finish)
        return self

    def start(self, req):
        req.environ[_STARTED] = perf_counter()

    def finish(self, req, response):
        took = perf_counter() - req.environ[_STARTED]
        response.headers.append(("Server-Timing", f"app;dur={took * 1000:.3f}"))


TIMING = ServerTiming()
