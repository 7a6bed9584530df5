"""Signing as the Standard Webhooks specification says (standardwebhooks.com):
a secret is ``whsec_`` and the base64 of random bytes; a message's
signature is ``v1,`` and the base64 of the HMAC-SHA256 of
``<webhook-id>.<webhook-timestamp>.<body>`` under the secret's bytes.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

PREFIX = "whsec_"
#: Random bytes in a secret (the standard asks for 24 to 64).
SECRET_BYTES = 32


def new_secret() -> str:
    """A new subscription's secret, shown once."""
    return PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def key_of(secret: str) -> bytes:
    """The bytes a secret stands for: what the HMAC is keyed with."""
    return base64.b64decode(secret.removeprefix(PREFIX))


def signature(key: bytes, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` of one attempt (``timestamp``: its Unix seconds)."""
    signed = b"%s.%d.%s" % (message_id.encode("ascii"), timestamp, body)
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode("ascii")


def headers(key: bytes, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The standard's three headers of one attempt."""
    return {"webhook-id": message_id, "webhook-timestamp": str(timestamp),
            "webhook-signature": signature(key, message_id, timestamp, body)}
