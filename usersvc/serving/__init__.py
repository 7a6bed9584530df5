"""Running usersvc: ``server`` (``serve.py``'s options, a waitress server;
``main``), ``ops`` (request ids and the access log), ``cli`` (the
``usersvc`` command) and ``transfer`` (``usersvc copy``). ``usersvc.wsgi``
is the app a WSGI server (gunicorn, uWSGI, granian) is named."""
from .server import main

__all__ = ["main"]
