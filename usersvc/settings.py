"""What usersvc can be told, read from any of its three sources and checked
in one place: ``Settings`` (``make_app``'s keywords; ``serve.py``'s options,
``from_options``; ``USERSVC_*`` variables, ``from_environment``). Each
setting has one name, spelt by each source its own way (``max_body_size``,
``--max-body-size``, ``USERSVC_MAX_BODY_SIZE``), and one check, in
``__post_init__``; a value that cannot be used is a ``SettingError`` whose
``said(spelling)`` names it as its source spells it, in one line.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .hooks import DEFAULT_FEATURES, KNOWN, Feature, named, resolved

if TYPE_CHECKING:       # (imported when a server reads them: ``read_collections``)
    from .schema import Schema

#: The embedded default, and ``serve.py``'s: a SQLite file in the working directory.
DEFAULT_STORAGE = "sqlite:///users.db"
DEFAULT_MAX_BODY_SIZE = 64 * 1024
#: Requests that may wait for changes at once, for an app on a server's
#: threads (``make_app``, ``usersvc.wsgi``): half of 4 threads. serve.py
#: gives waiting requests threads of their own, and more places
#: (``serving.server.SERVED_MAX_WAITING``).
DEFAULT_MAX_WAITING = 2
#: Seconds the answer to a write sent with an ``Idempotency-Key`` is kept:
#: a day, as the draft suggests.
DEFAULT_IDEMPOTENCY_TTL = 24 * 3600
#: The most requests one ``POST /batch`` may hold.
DEFAULT_MAX_BATCH = 100
#: Seconds a stream of changes (Server-Sent Events) lasts before its
#: client is told to come back: five minutes.
DEFAULT_STREAM_SECONDS = 300

_ORIGIN = re.compile(r"https?://[^/\s]+")


class SettingError(ValueError):
    """A value usersvc cannot use: ``name`` (the setting), ``problem``
    ("must be ..."), said by the source in its own spelling."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name} {problem}")
        self.name, self.problem = name, problem

    def said(self, spell: Callable[[str], str]) -> str:
        return f"{spell(self.name)} {self.problem}"


def as_option(name: str) -> str:
    """``serve.py``'s spelling: ``--max-body-size`` (``--cors-origin``, repeated)."""
    return "--cors-origin" if name == "cors_origins" else "--" + name.replace("_", "-")


def as_variable(name: str) -> str:
    """The environment's spelling: ``USERSVC_MAX_BODY_SIZE``."""
    return "USERSVC_" + name.upper()


@dataclass(frozen=True)
class Settings:
    """One app's settings, checked when made. ``tokens`` is a
    ``{token: "read" | "write"}`` mapping, a tokens file's ``Path`` or
    ``Tokens``, read by the tokens feature into ``Tokens`` (``None``: no
    tokens asked for); ``cors_origins`` the origins
    (``scheme://host[:port]``, ``*`` for any) whose pages may call the app;
    ``max_waiting`` the requests that may wait for changes at once (long-polls
    and streams); ``stream_seconds`` how long a stream of changes lasts;
    ``idempotency_ttl`` seconds; ``max_batch`` the most requests a
    ``POST /batch`` may hold; ``metrics`` counts for Prometheus (the
    ``metrics`` extra). The rest are for a server around the app:
    ``prefix`` (a path to mount it under), ``access_log``,
    ``metrics_port`` / ``metrics_host`` (where a server serves the metrics),
    ``metrics_dir`` (a directory where the processes of one server count
    together, ``features.metrics.shared``),
    and ``collections``, the schemas to serve (``None``: users), which a
    server reads as ``module:NAME`` entries (``read_collections``).
    ``features``: what plugs into the core (``usersvc.hooks``; as text,
    ``read_features``); a setting of a feature left out is refused;
    ``speedups``, the fast paths (``usersvc.fast``; as text, on or off).
    ``own``: a feature's settings of its own, those the core has no field
    for, by name (``{"webhooks_timeout": 2.0}``), each read by its feature
    (``usersvc.hooks``, "Its settings")."""

    storage: Any = DEFAULT_STORAGE           # a URL, or an open store
    max_body_size: int = DEFAULT_MAX_BODY_SIZE
    tokens: Any = None
    cors_origins: frozenset[str] = frozenset()
    max_waiting: int = DEFAULT_MAX_WAITING
    stream_seconds: int = DEFAULT_STREAM_SECONDS
    idempotency_ttl: int = DEFAULT_IDEMPOTENCY_TTL
    max_batch: int = DEFAULT_MAX_BATCH
    metrics: bool = False
    prefix: str = ""
    access_log: bool = False
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    metrics_dir: str | None = None
    collections: tuple[Schema, ...] | None = None   # the schemas to serve (None: users)
    features: tuple[str | Feature, ...] = DEFAULT_FEATURES
    speedups: bool = True
    own: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        def set_(name: str, value: Any) -> None:        # (a frozen dataclass's own field)
            object.__setattr__(self, name, value)
        if isinstance(self.storage, str) and not self.storage.strip():
            raise SettingError("storage", "must name a store (memory://, sqlite:///FILE, "
                                          "postgresql://...)")
        for name, least in _LEAST.items():
            value = getattr(self, name)
            if type(value) is not int or value < least:
                raise SettingError(name, f"must be a whole number of at least {least}, "
                                         f"not {value!r}")
        set_("cors_origins", parse_origins(self.cors_origins))
        set_("prefix", "/" + self.prefix.strip("/") if self.prefix.strip("/") else "")
        if self.metrics_port is not None:
            if type(self.metrics_port) is not int or not 0 <= self.metrics_port <= 65535:
                raise SettingError("metrics_port", f"must be from 0 to 65535, "
                                                   f"not {self.metrics_port!r}")
            set_("metrics", True)
        if self.metrics_dir is not None:
            if not (os.path.isdir(self.metrics_dir)
                    and os.access(self.metrics_dir, os.W_OK | os.X_OK)):
                raise SettingError("metrics_dir", f"must be a directory usersvc can write to, "
                                                  f"not {self.metrics_dir!r}")
            set_("metrics", True)
        set_("features", _checked_features(self))
        if type(self.speedups) is not bool:     # (not a text: "off" would be true)
            raise SettingError("speedups", f"must be True or False, not {self.speedups!r}")

    @classmethod
    def from_text(cls, given: Mapping[str, str], spell: Callable[[str], str],
                  **settled: Any) -> Settings:
        """Settings from text (a variable's value, an option's), each read as
        its field's type: ``tokens_file`` a file of tokens (its ``Path``),
        ``cors_origins`` origins separated by spaces or commas, ``access_log``
        0 or 1, ``speedups`` on or off. ``settled``: values already read."""
        values: dict[str, Any] = dict(settled)
        try:
            for name, text in given.items():
                text = text.strip()
                if not text:
                    continue
                if name == "tokens_file":
                    values["tokens"] = Path(text)   # read by the tokens feature
                elif name == "cors_origins":
                    values[name] = text.replace(",", " ").split()
                elif name in _SWITCHES:
                    if text not in _SWITCHES[name]:
                        raise SettingError(name, "must be {} or {}".format(*_SWITCHES[name])
                                           + f", not {text!r}")
                    values[name] = text in ("1", "on")
                elif name == "collections":
                    values[name] = read_collections(text)
                elif name == "features":
                    values[name] = read_features(text)
                elif name in _LEAST or name == "metrics_port":
                    values[name] = _whole(name, text)
                elif name not in FIELDS:    # a feature's own: its feature reads the text
                    values.setdefault("own", {})[name] = text
                else:
                    values[name] = text
            return cls(**values)
        except SettingError as e:
            name = "tokens_file" if e.name == "tokens" and "tokens_file" in given else e.name
            raise SettingError(spell(name), e.problem) from None     # (said its way)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> Settings:
        """Settings from ``USERSVC_*`` variables; any other ``USERSVC_``
        variable (but the tests' ``USERSVC_TEST_*``) is refused by name."""
        known = {as_variable(name): name for name in (*READ_FROM_TEXT, *own_settings())}
        unknown = sorted(k for k in environ if k.startswith("USERSVC_") and k not in known
                         and not k.startswith("USERSVC_TEST_"))
        if unknown:
            raise SettingError(unknown[0], f"is not a variable of usersvc's (it reads "
                                           f"{', '.join(known)})")
        return cls.from_text({name: environ[variable] for variable, name in known.items()
                              if variable in environ}, as_variable)


#: What a server reads as text (options, variables): every field but
#: ``tokens`` (read from ``tokens_file``) and ``metrics`` (on with a port).
READ_FROM_TEXT = ("storage", "tokens_file", "cors_origins", "max_body_size", "prefix",
                  "max_waiting", "stream_seconds", "access_log", "idempotency_ttl", "max_batch",
                  "collections", "features", "speedups", "metrics_port", "metrics_host",
                  "metrics_dir")


def own_settings() -> dict[str, str]:
    """The settings of ``hooks.KNOWN``'s features that are their own (no
    field of ``Settings``'s), each with its feature's name: read from text
    as the others are (``--webhooks-timeout``, ``USERSVC_WEBHOOKS_TIMEOUT``)."""
    return {setting: name for name, (_, owned) in KNOWN.items() for setting in owned
            if setting not in FIELDS}


_SWITCHES = {"access_log": ("0", "1"), "speedups": ("on", "off")}     # (one of two words)

#: The whole numbers among the settings, and the least each may be.
_LEAST = {"max_body_size": 1, "max_waiting": 0, "stream_seconds": 1, "idempotency_ttl": 1,
          "max_batch": 1}


def _whole(name: str, text: str) -> int:
    if not text.isdigit():
        raise SettingError(name, f"must be a whole number of at least {_LEAST.get(name, 0)}, "
                                 f"not {text!r}")
    return int(text)


def parse_origins(origins: Iterable[str]) -> frozenset[str]:
    if isinstance(origins, str):
        origins = [origins]
    parsed = frozenset(origin.rstrip("/") for origin in origins)
    for origin in sorted(parsed):
        if origin != "*" and not _ORIGIN.fullmatch(origin):
            raise SettingError("cors_origins", f"cannot be used: not an origin "
                                               f"(scheme://host[:port]): {origin!r}")
    return parsed


def read_features(text: str) -> tuple[Any, ...]:
    """The features a text names, separated by commas: ``hooks.KNOWN``'s, ``default``'s,
    none (``none``: the plain core), and ``module:NAME``, a ``Feature`` of yours;
    each name once (``default,webhooks``: the default ones, webhooks among them)."""
    features: list[Any] = []
    for entry in (e.strip() for e in text.split(",")):
        module_name, colon, name = entry.partition(":")
        if colon:
            feature = getattr(imported(module_name, "features", entry), name, None)
            if feature is None:
                raise SettingError("features", f"cannot be used: {module_name} has no {name}")
            features.append(feature)
        elif entry == "default":
            features += [name for name in DEFAULT_FEATURES if name not in features]
        elif entry != "none" and entry not in features:
            features.append(entry)
    return tuple(features)


def _checked_features(settings: Settings) -> tuple[str | Feature, ...]:
    """``settings.features``: known names or features, none twice; a
    setting of a feature left out refused, by name, as one no feature has;
    one given read by its feature's ``read_setting``, if it has one
    (``usersvc.hooks``), so that a value it cannot use is refused as the
    settings are made. A feature's own settings (``settings.own``) are
    ``KNOWN``'s, or those a feature object of yours names in its ``options``."""
    given = settings.features
    features = read_features(given) if isinstance(given, str) else tuple(given)
    try:
        names = named(features)
    except ValueError as e:
        raise SettingError("features", f"cannot be used: {e}") from None
    owner = {setting: name for name, (_, owned) in KNOWN.items() for setting in owned}
    for name, feature in zip(names, features, strict=True):
        if name not in KNOWN:       # a feature of yours: the settings it names its own
            owner |= dict.fromkeys(getattr(feature, "options", None) or (), name)
    given_values = {setting: getattr(settings, setting) for setting in owner
                    if setting in FIELDS
                    and getattr(settings, setting) != FIELDS[setting].default}
    for setting in settings.own:
        if setting in FIELDS:   # (``make_app`` has no keyword of a server's: ``prefix``...)
            raise SettingError(setting, "is a field of Settings, not a feature's own: give it "
                                        "to Settings (build_app), not make_app")
        if setting not in owner:
            raise SettingError(setting, "is not a setting of usersvc's or of a feature's")
    own = dict(settings.own)
    for setting, value in (given_values | own).items():
        name = owner[setting]
        if name not in names:
            raise SettingError(setting, f"is a setting of the {name} feature, which is "
                                        f"not among the features")
        read = getattr(resolved([features[names.index(name)]])[0], "read_setting", None)
        try:        # the feature reads its own (``usersvc.hooks``: tokens)
            read_value = value if read is None else read(setting, value)
        except ValueError as e:
            raise SettingError(setting, f"cannot be used: {e}") from None
        if setting in own:
            own[setting] = read_value
        else:
            object.__setattr__(settings, setting, read_value)
    object.__setattr__(settings, "own", own)
    return features


#: ``Settings``' fields, by name.
FIELDS = Settings.__dataclass_fields__


def imported(module_name: str, setting: str, entry: str = "") -> Any:
    """A module, found as Python finds it, and in the working directory
    first, as gunicorn and uWSGI find theirs; a ``SettingError`` of
    ``setting``'s, in one line, if it cannot be imported (naming ``entry``,
    the setting's text that named it) or fails."""
    import importlib
    import sys
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(module_name)
    except ImportError as e:
        raise SettingError(setting, f"cannot be used: {entry or module_name}: {e}") from None
    except ValueError as e:     # a declaration the module makes refused (``Schema``)
        raise SettingError(setting, f"cannot be used: {module_name}: {e}") from None
    except Exception as e:      # the module itself failed: one line, not its traceback
        raise SettingError(setting, f"cannot be used: {module_name} raised "
                                    f"{type(e).__name__}: {e}") from None


def read_collections(text: str) -> tuple[Schema, ...]:
    """The schemas ``module:NAME`` entries name, separated by commas
    (``examples.library:BOOKS``): each NAME a ``Schema``, or a tuple of
    them. Users come first unless the list says otherwise: a tuple is a
    whole set of collections, and a list that names a ``users`` collection
    places it itself. A module is found as Python finds it, and in the
    working directory first, as gunicorn and uWSGI find theirs (``imported``)."""
    from .schema import USER, Schema
    schemas: list[Schema] = []
    whole = False
    for entry in (e.strip() for e in text.split(",")):
        module_name, colon, name = entry.partition(":")
        if not (module_name and colon and name.isidentifier()):
            raise SettingError("collections", f"cannot be used: {entry!r} is not module:NAME")
        value = getattr(imported(module_name, "collections", entry), name, None)
        if value is None:
            raise SettingError("collections", f"cannot be used: {module_name} has no {name}")
        found = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        if not found or not all(isinstance(schema, Schema) for schema in found):
            raise SettingError("collections", f"cannot be used: {entry} is not a Schema "
                                              f"or a tuple of them")
        whole = whole or isinstance(value, (tuple, list))
        schemas += found
    if not whole and all(schema.plural != "users" for schema in schemas):
        schemas.insert(0, USER)
    return tuple(schemas)
