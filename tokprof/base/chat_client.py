"""A small client of an OpenAI-compatible Chat Completions endpoint (a local llama.cpp server, vLLM,
Ollama, or an API given with an explicit key), for ``tokprof probe``: one request at a time, a
time-out per request, retries with back-off on 429, 5xx and connection errors, never a redirect to
another host with the key. Standard library only."""

from __future__ import annotations

import ipaddress
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any

from tokprof.base.errors import TokprofError


class ChatError(TokprofError):
    """A request that failed after its retries (the message says why, without the key)."""


@dataclass(frozen=True)
class ChatClient:
    endpoint: str  # the base URL (``http://127.0.0.1:8080``, ``.../v1``) or the full completions URL
    model: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    timeout: float = 60.0
    retries: int = 2
    backoff: float = 0.5  # seconds before the first retry, doubled after each

    @property
    def url(self) -> str:
        """The completions URL: ``/v1/chat/completions`` added to the endpoint's path, its query kept."""
        parts = urllib.parse.urlsplit(self.endpoint)
        path = parts.path.rstrip("/")
        if not path.endswith("/chat/completions"):
            path += "/chat/completions" if path.endswith("/v1") else "/v1/chat/completions"
        return urllib.parse.urlunsplit(parts._replace(path=path))

    def body(self, messages: Sequence[dict], tools: Sequence[dict] | None) -> dict:
        body: dict = {"messages": list(messages), "temperature": self.temperature, "stream": False}
        if self.model:
            body["model"] = self.model
        if tools:
            body["tools"] = list(tools)
        return body

    def complete(self, messages: Sequence[dict], tools: Sequence[dict] | None = None) -> str:
        """The answer's text; raises :class:`ChatError` once the retries are spent."""
        data = json.dumps(self.body(messages, tools)).encode("utf-8")
        headers = {"content-type": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        delay, last = self.backoff, "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(delay)
                delay *= 2
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with _OPENER.open(request, timeout=self.timeout) as response:
                    return _answer(json.loads(response.read().decode("utf-8")))
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
                if exc.code != 429 and exc.code < 500:
                    break  # the request itself is wrong: retrying sends it wrong again
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
                last = str(getattr(exc, "reason", exc)) or type(exc).__name__
            except (ValueError, KeyError, TypeError, IndexError, AttributeError):
                last = "not a Chat Completions answer"
                break
        raise ChatError(f"{self._shown_url()}: {last}")

    def _shown_url(self) -> str:
        """The URL without its query (which may hold a key)."""
        return urllib.parse.urlunsplit(urllib.parse.urlsplit(self.url)._replace(query=""))


def _answer(doc: Any) -> str:
    content = doc["choices"][0]["message"].get("content")
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        raise TypeError("no text")
    return content


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are not followed: a key must never be re-sent to where a server points."""

    def redirect_request(
        self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


def loopback_host(host: str) -> bool:
    """Whether a host name or address is the loopback interface (``127.attacker.example`` is not)."""
    host = host.strip().lower().removeprefix("[").removesuffix("]")
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback(endpoint: str) -> bool:
    """Whether an endpoint URL points at this machine's loopback interface."""
    return loopback_host(urllib.parse.urlsplit(endpoint).hostname or "")
