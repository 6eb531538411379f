"""Credentials out of what a recording keeps of a call's envelope (headers and URL), before anything
touches disk or the terminal: by a header's or parameter's name, and by what a value looks like.

Bodies are not redacted: a prompt is what is recorded (docs/record.md says so).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

REDACTED = "[redacted]"

#: Header and URL parameter names whose values are secrets whatever their spelling: the word in the
#: name is enough (``authorization``, ``helicone-auth``, ``x-authentication``, ``x-api-key``,
#: ``cf-aig-authorization``, ``x-amz-security-token``, ``x-goog-iap-jwt-assertion``, ...).
_SECRET = re.compile(
    r"auth|cookie|key|token|secret|passw|credential|signature|jwt|assertion|private|bypass", re.IGNORECASE
)
#: URL parameters that sign a URL (a signed or pre-signed link: Azure's SAS ``sig``, S3's and GCS's
#: ``X-Amz-Signature``/``X-Goog-Signature``, CloudFront's ``Signature``/``Key-Pair-Id``, OAuth's ``code``).
_SIGNING = {"sig", "signature", "hmac", "code", "x-amz-signature", "x-goog-signature", "key-pair-id", "policy"}
#: What a credential looks like wherever it is: an HTTP authentication scheme and its value, the
#: vendors' key prefixes (``sk-``, ``sk-ant-``, ``key-``, ``pk-``, ``rk-``, GitHub's ``ghp_``, Slack's
#: ``xoxb-``, Hugging Face's ``hf_``, Google's ``AIza``, AWS's ``AKIA``, Groq's ``gsk_``, ...), a JWT.
_LOOKS_SECRET = re.compile(
    r"^\s*(?:bearer|basic|digest|token|bot|negotiate|aws4-hmac-sha256|hmac|apikey|key)\s+\S"
    r"|(?<![A-Za-z0-9])(?:sk|pk|rk|key|api|xai|gsk|csk|ghp|gho|ghu|ghs|ghr|github_pat|glpat|hf|r8|npm|pypi|dop_v1)"
    r"[-_][A-Za-z0-9_\-]{8,}"
    r"|(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{8,}"
    r"|(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{12,}"
    r"|(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_\-]{20,}"
    r"|(?<![A-Za-z0-9_-])ya29\.[A-Za-z0-9_\-]{8,}"
    r"|eyJ[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]{6,}\.",
    re.IGNORECASE,
)


def is_secret(name: str) -> bool:
    """Whether a header's (or URL parameter's) value is a credential by its name: ``authorization``,
    ``proxy-authorization``, ``helicone-auth``, ``x-authentication``, ``x-api-key``, ``cookie``,
    ``set-cookie`` and any name that says auth, key, token, secret, password, credential, signature,
    JWT, assertion, private or bypass."""
    return _SECRET.search(name) is not None


def looks_secret(value: str) -> bool:
    """Whether a value looks like a credential, whatever it is named: ``Bearer ...``, ``Basic ...``,
    a vendor's key (``sk-...``, ``key-...``, ``ghp_...``, ``AIza...``, ``AKIA...``), a JWT."""
    return _LOOKS_SECRET.search(value) is not None


def redacted(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Headers as a recording keeps them: names lower-cased, repeated headers joined by ``, ``, values
    that are secrets by their name or their look replaced by ``[redacted]``."""
    out: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        value = REDACTED if is_secret(key) or looks_secret(value) else value
        out[key] = value if key not in out else f"{out[key]}, {value}"
    return out


def _secret_parameter(name: str, value: str) -> bool:
    return is_secret(name) or name.lower() in _SIGNING or looks_secret(value)


def safe_url(url: str) -> str:
    """A URL as a recording keeps it (and a live line may show): user info and fragment dropped; a
    query parameter that is a secret by its name (``api_key``, ``token``), signs the URL (``sig``,
    ``X-Amz-Signature``) or looks like a credential, and a path segment that looks like one (a key
    some gateways take in the path), ``[redacted]``."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    path = "/".join(REDACTED if looks_secret(unquote(s)) else s for s in parts.path.split("/"))
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = urlencode([(k, REDACTED if _secret_parameter(k, v) else v) for k, v in pairs])
    return urlunsplit((parts.scheme, netloc, path, query, ""))
