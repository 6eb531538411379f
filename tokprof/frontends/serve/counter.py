"""What the routes do, without HTTP: a body in, a JSON answer out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tokprof import Buckets
from tokprof.base.errors import InputError, TokprofError
from tokprof.base.text import visible
from tokprof.version import __version__
from tokprof.frontends.serve.answers import ROUTE_MESSAGES, bad, kind_of
from tokprof.frontends.serve.body import Body, check_depth, check_model_name, ignored_fields, parse_body
from tokprof.frontends.serve.conversations import ConversationCache, Request
from tokprof.frontends.serve.limits import DEFAULT_THRESHOLDS
from tokprof.frontends.serve.models import Loaded, Models


def parse_thresholds(value: str | Sequence[float]) -> tuple[float, ...]:
    """Fill thresholds as shares of the window: ``"70,80"`` (percent) or shares such as ``(0.7, 0.8)``."""
    if isinstance(value, str):
        from tokprof.base.text import percentages

        return tuple(sorted(set(percentages(value, "--thresholds"))))
    levels = tuple(float(v) for v in value)
    if not all(0 < level <= 1 for level in levels):
        raise TokprofError(f"thresholds: expected shares of the window above 0 and at most 1, found {list(value)}")
    return tuple(sorted(set(levels)))


@dataclass(frozen=True)
class Read:
    """A count request's body, checked: the model it names and the one that counts it, its parts."""

    route: str
    body: Body
    requested: str | None
    name: str
    messages: list
    tools: list | None
    system: Any

    @property
    def texts(self) -> list[str]:
        assert self.body.messages is not None  # checked by Counter.read
        return self.body.messages

    @property
    def tools_text(self) -> str:
        return self.body.texts.get("tools", "null") if self.tools is not None else "null"

    @property
    def system_text(self) -> str:
        return self.body.texts.get("system", "null") if self.system is not None else "null"

    @property
    def key(self) -> tuple:
        """What a conversation is found by (as :attr:`Request.key`)."""
        return (self.route, self.name, self.tools_text, self.system_text, self.texts[0] if self.texts else None)


class Counter:
    """What the routes do, without HTTP: a body in, a JSON answer out (or :class:`Rejected`)."""

    def __init__(
        self,
        models: Models,
        cache: ConversationCache,
        thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        window: int | None = None,
    ):
        self.models = models
        self.cache = cache
        self.thresholds = tuple(thresholds)
        self.window = window

    def read(self, route: str, raw: bytes) -> Read:
        """A count request's body, checked (:class:`Rejected` for what is wrong), and the name of the
        model that counts it (not loaded yet)."""
        body = parse_body(raw)
        value = body.value
        requested = value.get("model")
        if requested is not None and not isinstance(requested, str):
            raise bad(f"expected a string, found {kind_of(requested)}", "model")
        check_model_name(requested)
        name = self.models.canonical(requested)
        if "messages" not in value:
            raise bad("missing: the request needs its messages", "messages")
        messages = value["messages"]
        if not isinstance(messages, list) or body.messages is None:
            raise bad(f"expected a list of messages, found {kind_of(messages)}", "messages")
        if not messages:
            raise bad("empty: a prompt needs at least one message", "messages")
        tools = value.get("tools")
        if tools is not None and not isinstance(tools, list):
            raise bad(f"expected a list of tool definitions, found {kind_of(tools)}", "tools")
        system = value.get("system") if route == ROUTE_MESSAGES else None
        if system is not None and not isinstance(system, (str, list)):
            raise bad(f"expected a string or a list of text blocks, found {kind_of(system)}", "system")
        for key in ("tools", "system"):
            if key in body.texts and (key == "tools" or route == ROUTE_MESSAGES):
                check_depth(body.texts[key], key)
        return Read(route, body, requested, name, messages, tools, system)

    def count(self, route: str, raw: bytes) -> tuple[dict, dict]:
        """The answer to a count request, and what its log line says (nothing of its content)."""
        read = self.read(route, raw)
        loaded = self.models.resolve(read.requested)
        request = Request(
            route, loaded, read.messages, read.texts, read.tools, read.tools_text, read.system, read.system_text
        )
        try:
            buckets, reused = self.cache.count(request)
        except InputError as exc:
            raise bad(exc.what, exc.where) from None
        answer = self._answer(route, loaded, read.requested, buckets, reused)
        ignored = ignored_fields(route, read.body.value)
        if ignored:
            answer["warnings"].append({"code": "ignored-fields", "message": ignored})
        return answer, {"model": loaded.name, "total": buckets.total, "reused": reused}

    def context_window(self, loaded: Loaded, requested: str | None) -> int | None:
        """The window the fill is measured against: ``--window``; for an estimate the requested model's
        when public data knows it (as a profile's model says); else the model's."""
        if self.window is not None:
            return self.window
        if not loaded.chat.exact and requested:
            from tokprof.names import context_window

            return context_window(requested) or loaded.chat.context_window
        return loaded.chat.context_window

    def _answer(self, route: str, loaded: Loaded, requested: str | None, buckets: Buckets, reused: bool) -> dict:
        total = buckets.total
        window = self.context_window(loaded, requested)
        fill = None if not window else round(total / window, 6)
        answer: dict[str, Any] = {}
        if route == ROUTE_MESSAGES:
            answer["input_tokens"] = total
        answer["model"] = loaded.name
        if requested and requested != loaded.name:
            answer["requested_model"] = requested
        answer["exact"] = buckets.exact
        if not buckets.exact and loaded.chat.method:
            answer["method"] = loaded.chat.method
        answer["buckets"] = buckets.as_dict()
        answer["total"] = total
        answer["context_window"] = window
        answer["fill"] = fill
        answer["thresholds"] = list(self.thresholds)
        answer["crossed"] = [t for t in self.thresholds if window and total >= t * window]
        answer["warnings"] = [{"code": n.code, "message": visible(n.message)} for n in buckets.warnings]  # never raw
        answer["reused"] = reused
        return answer

    def models_list(self) -> dict:
        from tokprof.names import registered_models

        loaded = self.models.loaded()
        data = []
        registered = set()
        for spec in registered_models(plugins=True):
            registered.add(spec.name)
            model = loaded.get(spec.name)
            chat = model.chat if model is not None else None
            data.append(
                {
                    "id": spec.name,
                    "object": "model",
                    "source": "embedded",
                    "aliases": list(spec.aliases),
                    "exact": spec.exact,
                    "summary": spec.summary,
                    "loaded": chat is not None,
                    "context_window": chat.context_window if chat is not None else None,
                }
            )
        for name in self.models.configured:
            if name in registered:
                continue
            model = loaded.get(name)
            chat = model.chat if model is not None else None
            data.append(
                {
                    "id": name,
                    "object": "model",
                    "source": "local",
                    "aliases": [],
                    "exact": chat.exact if chat is not None else True,
                    "summary": f"{chat.counter.origin}; chat template {chat.prompt_format.origin}" if chat else "",
                    "loaded": chat is not None,
                    "context_window": chat.context_window if chat else None,
                }
            )
        return {
            "object": "list",
            "data": data,
            "default": self.models.default,
            "closed_models": "a closed model's name is counted by its proxy: claude-* by claude-proxy, gpt-*, "
            "o-series and codex by openai-proxy (estimates, exact: false)",
        }

    def health(self) -> dict:
        return {
            "status": "ok",
            "version": __version__,
            "default_model": self.models.default,
            "loaded_models": sorted(self.models.loaded()),
            "cache": self.cache.stats(),
        }
