"""Where a webhook goes, and one attempt to send it there.

A target is an ``http`` or ``https`` URL with a host, no user or password
and no fragment (``url_problem``). Its host is resolved at subscribe and
again at every attempt, and every address it gives is checked
(``refusal``): one that is not public (loopback, private, link-local,
reserved, multicast, unspecified, or otherwise not global) refuses the
target unless private targets are allowed, which never allows the
unspecified and multicast addresses (no receiver listens there). An
attempt connects to an address it has just checked (``_Pinned``), so a
name whose answer changes between the check and the connection (DNS
rebinding) reaches nothing unchecked; ``Host``, SNI and the certificate
check still use the name.

``post`` makes one attempt with ``http.client``: no redirect followed (a
3xx is an answer like any), a time-out on every socket operation, at
most ``READ_LIMIT`` bytes of the answer read; the whole attempt's
deadline is the caller's to enforce (``Attempt.abandon`` shuts the socket:
the scheduler does, for an attempt past it, and when the server stops).
A subscription's connection is kept for its next attempt (``Line``) while
the receiver keeps it open and the answer was read whole, and taken
again only to the same scheme, host, port and address, that address
checked again first.
"""
from __future__ import annotations

import contextlib
import email.utils
import http.client
import ipaddress
import socket
import ssl
import threading
import time
from typing import NamedTuple
from urllib.parse import SplitResult, urlsplit

from ...release import VERSION

#: The most bytes of a receiver's answer read (the rest is not).
READ_LIMIT = 64 * 1024
#: The longest a URL may be, and the longest ``Retry-After`` honoured (a day).
MAX_URL = 2000
MAX_RETRY_AFTER = 86400.0
USER_AGENT = f"usersvc/{VERSION} (webhooks)"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class Refused(Exception):
    """A target that may not be reached: why, in words (no URL: it may
    hold what its owner did not mean to show)."""


def url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as a target, before any address is looked
    at (``None``: nothing)."""
    if len(url) > MAX_URL:
        return f"must be at most {MAX_URL} characters"
    if not url.isascii() or any(c <= " " or c == "\x7f" for c in url):
        return "must be an http or https URL without spaces or characters outside ASCII"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "is not a URL (its host or port cannot be read)"
    if parts.scheme not in ("http", "https"):
        return "must be an http or https URL"
    if not parts.hostname:
        return "must name a host"
    if parts.username is not None or parts.password is not None:
        return "must not hold a user name or password (every GET would show them)"
    if parts.fragment or url.endswith("#"):
        return "must not have a fragment (#...): it is never sent"
    if port == 0:
        return "must not name port 0"
    return None


def port_of(parts: SplitResult) -> int:
    return parts.port or (443 if parts.scheme == "https" else 80)


def refusal(address: Address, allow_private: bool) -> str | None:
    """Why ``address`` may not be a target (``None``: it may): what kind
    of address it is. An IPv6 address that carries an IPv4 one (mapped,
    6to4, Teredo) is judged by that one too."""
    carried: list[Address] = []
    if isinstance(address, ipaddress.IPv6Address):
        teredo = address.teredo
        carried += [a for a in (address.ipv4_mapped, address.sixtofour,
                                teredo[1] if teredo else None) if a is not None]
    for one in (*carried, address):     # (what it carries said first: it is where it goes)
        if one.is_unspecified:
            return "an unspecified address"
        if one.is_multicast:
            return "a multicast address"
        if allow_private:
            continue
        for kind, said in (("is_loopback", "a loopback address"),
                           ("is_link_local", "a link-local address"),
                           ("is_reserved", "a reserved address"),
                           ("is_private", "a private address")):
            if getattr(one, kind):
                return said
        if not one.is_global:
            return "not a public address"
    return None


def addresses_of(host: str, port: int) -> list[Address]:
    """Every address ``host`` resolves to, in the resolver's order, each
    once; ``Refused`` if it resolves to none."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise Refused(f"its host does not resolve ({_said(e)})") from None
    addresses: list[Address] = []
    for _, _, _, _, sockaddr in found:
        address = ipaddress.ip_address(str(sockaddr[0]).partition("%")[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise Refused("its host resolves to no address")
    return addresses


def checked(url: str, allow_private: bool) -> list[Address]:
    """The addresses ``url``'s host resolves to, every one allowed; or
    ``Refused``, saying which is not and why."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    addresses = addresses_of(host, port_of(parts))
    for address in addresses:
        why = refusal(address, allow_private)
        if why is not None:
            shown = "" if host == str(address) else f"resolves to {address}, which "
            must = "" if allow_private else ": a target must be a public address"
            raise Refused(f"{host} {shown}is {why}{must}")
    return addresses


class Outcome(NamedTuple):
    """What an attempt came to: the receiver's status (``None``: no
    answer), what went wrong otherwise (``error``), and the seconds its
    ``Retry-After`` asked for (``None``: none)."""

    status: int | None
    error: str | None = None
    retry_after: float | None = None

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


class _Pinned(http.client.HTTPConnection):
    """An HTTP connection to one checked address, whatever the name resolves to now."""

    def __init__(self, host: str, port: int, address: Address, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((str(self.address), self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedTLS(_Pinned):
    """The same over TLS, the certificate checked against the name."""

    def __init__(self, host: str, port: int, address: Address, timeout: float,
                 context: ssl.SSLContext) -> None:
        super().__init__(host, port, address, timeout)
        self.context = context

    def connect(self) -> None:
        super().connect()
        self.sock = self.context.wrap_socket(self.sock, server_hostname=self.host)


class Attempt:
    """One attempt under way: its deadline (``time.monotonic``), and how
    to end it early (``abandon``: from another thread)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.connection: _Pinned | None = None
        self.abandoned = False
        self._lock = threading.Lock()

    def abandon(self) -> None:
        """Shut the attempt's socket: a read or write it is blocked in fails now."""
        with self._lock:
            self.abandoned = True
            sock = None if self.connection is None else self.connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):      # (closed already)
                sock.shutdown(socket.SHUT_RDWR)

    def using(self, connection: _Pinned) -> None:
        with self._lock:
            self.connection = connection
            if self.abandoned:
                raise TimeoutError("abandoned")

    def done(self) -> bool:
        """The attempt no longer uses its connection (an ``abandon`` from now
        on shuts nothing: the next attempt may be using it); whether it was
        abandoned."""
        with self._lock:
            self.connection = None
            return self.abandoned


#: Where a kept connection goes: the scheme, the host, the port, the address.
Key = tuple[str, str, int, Address]


class Line:
    """One subscription's connection between its attempts (HTTP/1.1's
    persistent connections, RFC 9112 §9.3), used by one thread at a time:
    a TCP connection (and TLS handshake) a delivery saved, for the receiver
    and for the sender."""

    def __init__(self) -> None:
        self.key: Key | None = None
        self.connection: _Pinned | None = None

    def take(self, key: Key) -> _Pinned | None:
        """The connection kept, if it goes where ``key`` says (any other, closed)."""
        connection, kept = self.connection, self.key
        self.connection = self.key = None
        if connection is not None and kept != key:
            connection.close()
            connection = None
        return connection

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = self.key = None


_TLS = ssl.create_default_context()


def post(url: str, body: bytes, headers: dict[str, str], allow_private: bool, timeout: float,
         attempt: Attempt, line: Line) -> Outcome:
    """One POST of ``body`` to ``url``, its host resolved and checked now,
    to the first checked address that takes the connection: ``line``'s,
    kept from the last attempt, if it goes there (and a new one if the
    receiver has closed it meanwhile), which keeps it again afterwards if
    the receiver did and the answer was read whole."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", port_of(parts)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        addresses = checked(url, allow_private)
    except Refused as e:
        return Outcome(None, f"refused: {e}")
    error = "no address took the connection"
    for address in addresses:
        key = (parts.scheme, host, port, address)
        kept = line.take(key)
        while True:
            reused, keep = kept is not None, False
            connection = kept or (_PinnedTLS(host, port, address, timeout, _TLS)
                                  if parts.scheme == "https" else _Pinned(host, port, address,
                                                                          timeout))
            kept = None
            try:
                attempt.using(connection)
                connection.request("POST", target, body, {
                    **headers, "Content-Type": "application/json", "User-Agent": USER_AGENT})
                response = connection.getresponse()
                response.read(READ_LIMIT)
                keep = response.isclosed() and not response.will_close
                return Outcome(response.status, None,
                               retry_after(response.getheader("Retry-After")))
            except (OSError, http.client.HTTPException) as e:
                if attempt.abandoned or isinstance(e, TimeoutError):
                    return Outcome(None, "timed out")      # (abandoned: its deadline passed)
                if reused and isinstance(e, ConnectionError):
                    continue        # (the receiver closed the one kept: a new connection)
                error = _said(e)
                if not isinstance(e, ConnectionRefusedError):
                    return Outcome(None, error)
                break               # (refused: the next address may listen)
            finally:
                if attempt.done() or not keep:
                    connection.close()
                else:
                    line.key, line.connection = key, connection
    return Outcome(None, error)


def _said(error: BaseException) -> str:
    """An error in a few words, without the URL."""
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, ConnectionResetError):
        return "connection reset"
    if isinstance(error, ssl.SSLError):
        return f"TLS: {error.reason or type(error).__name__}"
    if isinstance(error, socket.gaierror):
        return error.strerror or "name not resolved"
    if isinstance(error, http.client.HTTPException):
        return f"not an HTTP answer ({type(error).__name__})"
    return getattr(error, "strerror", None) or type(error).__name__


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """The seconds a ``Retry-After`` asks for (RFC 9110 §10.2.3: seconds,
    or an HTTP date), at most a day; ``None`` for none, or one unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    seconds = when.timestamp() - (time.time() if now is None else now)
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)
