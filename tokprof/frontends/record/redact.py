"""Credentials out of recorded headers, before anything touches disk."""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[redacted]"

#: Header names whose values are secrets whatever their spelling: the word in the name is enough.
_SECRET = re.compile(r"authorization|cookie|key|token|secret|password|credential", re.IGNORECASE)


def is_secret(name: str) -> bool:
    """Whether a header's value is a credential: ``authorization``, ``proxy-authorization``,
    ``x-api-key``, ``cookie``, ``set-cookie`` and any name that says key, token, secret, password or
    credential."""
    return _SECRET.search(name) is not None


def redacted(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Headers as a recording keeps them: names lower-cased, repeated headers joined by ``, ``, secret
    values replaced by ``[redacted]``."""
    out: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        value = REDACTED if is_secret(key) else value
        out[key] = value if key not in out else f"{out[key]}, {value}"
    return out
