"""Chat template rendering with the semantics of transformers' ``apply_chat_template``.

The environment mirrors transformers': an immutable sandboxed Jinja environment with
``trim_blocks`` and ``lstrip_blocks``, loop controls, a ``tojson`` that does not escape HTML,
``raise_exception``, ``strftime_now``, the ``{% generation %}`` tag, and the template variables
``messages``, ``tools``, ``documents``, ``add_generation_prompt`` and the tokenizer's special
tokens. Unlike transformers, ``strftime_now`` prints a pinned date, so that a profile does
not change from one day to the next.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cached_property, lru_cache
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tokprof.errors import ModelError

#: The date printed by templates that print today's date, when the log gives none.
DEFAULT_DAY = date(2025, 1, 1)


class _GenerationTag(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}`` renders its body (transformers uses it for masks)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def _raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


class _Namespace(jinja2.utils.Namespace):
    def __init__(*args, **kwargs):  # same signature trick as Jinja's Namespace
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _Namespace._check(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name, value):
        _Namespace._check(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name):
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(f"namespace attribute {name!r} is not allowed")


class _Dict:
    def __call__(self, *args, **kwargs):
        return dict(*args, **kwargs)

    def fromkeys(self, *args, **kwargs):
        return dict.fromkeys(*args, **kwargs)


@lru_cache(maxsize=32)
def _compile(source: str, lenient: bool) -> jinja2.Template:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationTag, jinja2.ext.loopcontrols],
        undefined=jinja2.ChainableUndefined if lenient else jinja2.Undefined,
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["dict"] = _Dict()
    env.globals["namespace"] = _Namespace
    try:
        return env.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ModelError(f"chat template has a syntax error at line {exc.lineno}: {exc.message}") from None


@dataclass
class ChatTemplate:
    """A chat template: its Jinja source (or named sources), where it came from, and its hash."""

    source: str | dict[str, str]
    origin: str
    special_tokens: dict[str, str] = field(default_factory=dict)

    @cached_property
    def sha256(self) -> str:
        text = self.source if isinstance(self.source, str) else json.dumps(self.source, sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    @cached_property
    def _text(self) -> str:
        return self.source if isinstance(self.source, str) else "".join(self.source.values())

    def select(self, has_tools: bool) -> str:
        """The template text to use: named templates pick ``tool_use`` when tools are given, as transformers does."""
        if isinstance(self.source, str):
            return self.source
        if has_tools and "tool_use" in self.source:
            return self.source["tool_use"]
        if "default" in self.source:
            return self.source["default"]
        raise ModelError(f"chat template {self.origin} has no 'default' template among {sorted(self.source)}")

    def render(
        self,
        messages: list[dict],
        tools: list[dict] | None,
        add_generation_prompt: bool,
        day: date | None = None,
        lenient: bool = False,
        template_tools: bool | None = None,
    ) -> str:
        """Render a prompt. Errors raised by the template propagate as jinja2 exceptions.

        ``template_tools`` picks the named template as if tools were (True) or were not (False) given;
        by default it follows ``tools``.
        """
        has_tools = bool(tools) if template_tools is None else template_tools
        template = _compile(self.select(has_tools), lenient)
        pinned = day or DEFAULT_DAY

        def strftime_now(fmt: str) -> str:
            return datetime(pinned.year, pinned.month, pinned.day).strftime(fmt)

        return template.render(
            messages=messages,
            tools=tools,
            documents=None,
            add_generation_prompt=add_generation_prompt,
            strftime_now=strftime_now,
            **self.special_tokens,
        )

    def check(self, where: str) -> None:
        """Compile every template now, so that a syntax error names the template, not a call."""
        sources = [self.source] if isinstance(self.source, str) else list(self.source.values())
        for source in sources:
            try:
                _compile(source, False)
            except ModelError as exc:
                raise ModelError(f"{where}: {exc}") from None

    def mentions_role(self, role: str) -> bool:
        """Whether the template compares with this role name (as a string literal)."""
        return f"'{role}'" in self._text or f'"{role}"' in self._text

    def has_default(self) -> bool:
        return isinstance(self.source, dict) and "default" in self.source


#: Message shapes, tried in order until the template renders the call: what inference servers send,
#: then arguments left as the JSON strings of the API, then also ``content`` kept (as "") where it was null.
SHAPES = ("parsed", "string-arguments", "keep-content")


def template_messages(messages: list[dict], template: ChatTemplate, shape: str = "parsed") -> list[dict]:
    """Messages as templates expect them, following what inference servers do with API requests.

    * keys whose value is None are dropped (as transformers does), except ``content`` in the
      ``keep-content`` shape, where it becomes "" for templates that read it unconditionally;
    * tool call ``arguments`` given as a JSON string are parsed into an object (as vLLM does),
      except in the ``string-arguments`` and ``keep-content`` shapes;
    * role ``developer`` becomes ``system`` when the template does not know it.
    """
    rename_developer = not template.mentions_role("developer")
    parse_arguments = shape == "parsed"
    out = []
    for message in messages:
        m: dict[str, Any] = {k: v for k, v in message.items() if v is not None}
        if shape == "keep-content" and "content" not in m:
            m["content"] = ""
        if rename_developer and m["role"] == "developer":
            m["role"] = "system"
        if "tool_calls" in m:
            calls = []
            for call in m["tool_calls"]:
                function = dict(call["function"])
                arguments = function.get("arguments")
                if parse_arguments and isinstance(arguments, str):
                    try:
                        parsed = json.loads(arguments)
                    except ValueError:
                        parsed = None
                    if isinstance(parsed, dict):
                        function["arguments"] = parsed
                calls.append({**{k: v for k, v in call.items() if v is not None}, "function": function})
            m["tool_calls"] = calls
        out.append(m)
    return out
