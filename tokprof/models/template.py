"""Chat template rendering with the semantics of transformers' ``apply_chat_template``.

The environment mirrors transformers': an immutable sandboxed Jinja environment with
``trim_blocks`` and ``lstrip_blocks``, loop controls, a ``tojson`` that does not escape HTML,
``raise_exception``, ``strftime_now``, the ``{% generation %}`` tag, and the template variables
``messages``, ``tools``, ``documents``, ``add_generation_prompt`` and the tokenizer's special
tokens. Unlike transformers, ``strftime_now`` prints a pinned date, so that a profile does
not change from one day to the next.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import itertools
import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cached_property, lru_cache
from typing import Any, ClassVar

import jinja2
import jinja2.compiler
import jinja2.ext
import jinja2.filters
import jinja2.nodes
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment

from tokprof.base.errors import ModelError
from tokprof.models import template_sizes as sizes
from tokprof.models.jsonmemo import remembered_json

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


#: What ``json.dumps(x, ensure_ascii=False)`` builds on every call, built once.
_JSON = json.JSONEncoder(ensure_ascii=False)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    if not ensure_ascii and indent is None and separators is None and not sort_keys:
        known = remembered_json(x)
        return _JSON.encode(x) if known is None else known
    if indent is None or (type(indent) is int and indent <= 0):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
    step = indent if type(indent) is int else len(str(indent))
    _fits(step * 8, "tojson(indent=...)")  # json writes indent times depth on every line: never a huge step
    pieces, size = [], 0  # counted as it is made (indent=10**6 writes a megabyte a line)
    for piece in sizes.json_chunks(x, indent, separators, sort_keys, ensure_ascii):
        size += len(piece)
        _fits(size, "tojson(indent=...)")
        pieces.append(piece)
    return "".join(pieces)


def _fits(size: int, what: str) -> None:
    """Refuse an operation whose result would be longer than a render may write."""
    limit = _BUDGET.limits.output
    if size > limit:
        raise _over(f"{what} would make too long a string or list", "output", f"{limit:,}")


def _center(value, width=80):
    _fits(max(len(str(value)), width if type(width) is int else 0), "center")
    return jinja2.filters.do_center(value, width)


def _indent(value, width=4, first=False, blank=False):
    _fits(sizes.indented(value, width), "indent")
    return jinja2.filters.do_indent(value, width, first, blank)


@jinja2.pass_eval_context
def _replace(eval_ctx, value, old, new, count=None):
    _fits(sizes.replaced(value, old, new, -1 if count is None else count), "replace")
    return jinja2.filters.do_replace(eval_ctx, value, old, new, count)


def _format(value, *args, **kwargs):
    _fits(sizes.formatted(str(value), args, kwargs, "%"), "format")
    return jinja2.filters.do_format(value, *args, **kwargs)


@jinja2.pass_eval_context
def _join(eval_ctx, value, d="", attribute=None):
    if isinstance(value, (list, tuple)):
        _fits(sizes.joined(d, value), "join")
    return jinja2.filters.do_join(eval_ctx, value, d, attribute)


#: Filters that could make a huge string in one step, checked first (tojson is set apart).
_SIZED_FILTERS = {"center": _center, "indent": _indent, "replace": _replace, "format": _format, "join": _join}
#: Filters whose output is not a function of the input, removed: a profile must not change from run to run.
_UNPINNED_FILTERS = ("random",)


#: Every attribute a plain dict has (those of dict and of object): ``getattr(d, name)`` fails for any other name.
_DICT_ATTRIBUTES = frozenset(dir(dict))
#: Loop attributes that are plain numbers or booleans.
_LOOP_NUMBERS = frozenset({"index0", "index", "first", "last", "length", "revindex", "revindex0", "depth", "depth0"})


class TemplateLimitError(jinja2.exceptions.SecurityError):
    """A chat template went over one of the limits it runs under (see :class:`Limits`)."""


class _CheckedConcat(jinja2.compiler.CodeGenerator):
    """``a ~ b`` compiled to a join that counts its size first (:meth:`_Environment.checked_concat`)."""

    def visit_Concat(self, node, frame):
        self.write("environment.checked_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


@dataclass(frozen=True)
class Limits:
    """What a chat template may do in one render. A template is code from a model repository: it runs
    in Jinja's sandbox (no attribute of Python's internals, no file, no import), and under these
    limits, each of which can be raised with its environment variable.

    * ``output``: characters a render may write (``TOKPROF_TEMPLATE_MAX_OUTPUT``), and so the size of
      a string or list that ``*`` may make;
    * ``power_bits``: the size in bits of a number ``**`` may make (``TOKPROF_TEMPLATE_MAX_POWER_BITS``);
    * ``range_items``: numbers all of a render's ``range()`` calls may give, together
      (``TOKPROF_TEMPLATE_MAX_RANGE``);
    * ``seconds``: the time a render may take (``TOKPROF_TEMPLATE_TIMEOUT``; checked on the main thread);
    * ``run_seconds``: the time all the renders of one run (a profile, a what-if, a check) may take
      together (``TOKPROF_TEMPLATE_RUN_TIMEOUT``);
    * ``memory``: the bytes of memory a render may add to the process (``TOKPROF_TEMPLATE_MAX_MEMORY``;
      held by the kernel's data limit where there is one, on the main thread: :func:`_memory_cap`). Nothing a render makes outlives it (the sandbox lets it
      change no object it was given, and each render starts from fresh variables), so this also
      bounds what the renders of a whole run hold at any time.

    Every operation that makes a string or list (``*``, ``+``, ``~``, ``%``, ``format``, ``center``,
    ``ljust``, ``rjust``, ``zfill``, ``expandtabs``, ``replace``, ``join``, ``indent``,
    ``tojson(indent=...)``) is refused before it runs when its result would be longer than
    ``output``, so that a single step never asks for gigabytes; ``memory`` bounds what the steps hold
    together (a list of many long strings, each under ``output``) and the steps not sized (``tojson`` or
    ``string`` of a list that holds one long string many times). ``lipsum`` and ``random`` (random
    text and choices) are not there at all, and object addresses (``<... at 0x7f...>``) are
    written as ``0x0``: a render is a function of its input.
    """

    output: int = 256 * 1024 * 1024
    power_bits: int = 16384
    range_items: int = 1_000_000
    seconds: float = 30.0
    run_seconds: float = 600.0
    memory: int = 4 * 1024 * 1024 * 1024

    @classmethod
    def from_environment(cls) -> "Limits":
        """The limits the environment sets (the defaults where it sets none), made once per set of
        the variables' values (:func:`_parsed_limits`)."""
        return _parsed_limits(tuple(map(os.environ.get, _LIMIT_NAMES)))


@lru_cache(maxsize=16)
def _parsed_limits(raw: tuple[str | None, ...]) -> Limits:
    """The limits these values of the variables (:data:`LIMIT_VARIABLES`, in order; None where unset) set."""
    values: dict[str, Any] = {}
    for (name, variable), text in zip(LIMIT_VARIABLES.items(), raw):
        if text is None:
            continue
        try:
            value = float(text) if name in ("seconds", "run_seconds") else int(text)
        except ValueError:
            raise ModelError(f"{variable}: expected a number, found {text!r}") from None
        if value <= 0:
            raise ModelError(f"{variable}: expected a positive number, found {text!r}")
        values[name] = value
    return dataclasses.replace(Limits(), **values)


LIMIT_VARIABLES = {
    "output": "TOKPROF_TEMPLATE_MAX_OUTPUT",
    "power_bits": "TOKPROF_TEMPLATE_MAX_POWER_BITS",
    "range_items": "TOKPROF_TEMPLATE_MAX_RANGE",
    "seconds": "TOKPROF_TEMPLATE_TIMEOUT",
    "run_seconds": "TOKPROF_TEMPLATE_RUN_TIMEOUT",
    "memory": "TOKPROF_TEMPLATE_MAX_MEMORY",
}
_LIMIT_NAMES = tuple(LIMIT_VARIABLES.values())


def _over(what: str, name: str, limit: object) -> TemplateLimitError:
    return TemplateLimitError(
        f"the chat template went over a limit: {what} (the limit is {limit}; set {LIMIT_VARIABLES[name]} to raise it)"
    )


class _Budget(threading.local):
    """What the render running on this thread may still do."""

    limits: Limits = Limits()
    range_left: int = Limits().range_items


_BUDGET = _Budget()


def _range(*args: int) -> range:
    """Jinja's sandboxed range, counted against the render's budget."""
    numbers = range(*args)
    _BUDGET.range_left -= len(numbers)
    if _BUDGET.range_left < 0:
        raise _over("range() gave too many numbers", "range_items", f"{_BUDGET.limits.range_items:,} in one render")
    return numbers


class _Environment(ImmutableSandboxedEnvironment):
    """The sandbox, with shortcuts for the two lookups that make most of a chat template's work, and
    the limits of :class:`Limits` on ``*`` and ``**`` (which Jinja then no longer works out when it
    compiles a template, so that ``{{ 'x' * 10**9 }}`` cannot take memory before a render starts).

    ``message.role`` on a plain dict: the sandbox tries the attribute, fails, and looks the key up;
    the shortcut looks the key up at once, for names that are not attributes of dict. ``loop.index0``
    and the other numbers of a loop: the sandbox checks that the attribute is safe, which these
    always are. The results are the same, failures included; everything else goes the sandbox's way.
    """

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = _CheckedConcat

    def call_binop(self, context, operator, left, right):
        if operator == "+" and type(left) is str and type(right) is str:  # most of a template's work: kept short
            if len(left) + len(right) > _BUDGET.limits.output:
                _fits(len(left) + len(right), "'+'")
            return left + right
        limits = _BUDGET.limits
        if operator == "+":
            if isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
                _fits((len(left) + len(right)) * sizes.unit(left), "'+'")
        elif operator == "%":
            if isinstance(left, str):
                _fits(sizes.formatted(left, (right,), {}, "%"), "'%'")
        elif operator == "**":
            if type(left) in (int, bool) and type(right) in (int, bool) and right > 0 and abs(left) > 1:
                if right * abs(left).bit_length() > limits.power_bits:
                    raise _over(f"{left} ** {right} is too large a number", "power_bits", f"{limits.power_bits:,} bits")
        elif operator == "*":
            for sized, times in ((left, right), (right, left)):
                if (
                    isinstance(sized, (str, list, tuple))
                    and isinstance(times, int)
                    and len(sized) * times * sizes.unit(sized) > limits.output
                ):
                    raise _over("'*' made too long a string or list", "output", f"{limits.output:,}")
        return super().call_binop(context, operator, left, right)

    def checked_concat(self, parts):
        """``a ~ b ~ ...``: each part as text, refused when together they are too long."""
        texts = [str(part) for part in parts]
        _fits(sizes.concatenated(texts), "'~'")
        return "".join(texts)

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (the sandbox's own signature)
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, str):
            size = sizes.method_result(getattr(__obj, "__name__", ""), owner, args, kwargs)
            if size is not None:
                _fits(size, f"str.{__obj.__name__}")
        return super().call(__context, __obj, *args, **kwargs)

    def wrap_str_format(self, value):
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        text = value.__self__

        def checked(*args, **kwargs):
            mapping = args[0] if value.__name__ == "format_map" and args else None
            _fits(sizes.formatted(text, args if mapping is None else (mapping,), kwargs, "{"), f"str.{value.__name__}")
            return wrapped(*args, **kwargs)

        return checked

    def getattr(self, obj, attribute):
        kind = type(obj)
        if kind is dict and type(attribute) is str and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except (TypeError, LookupError):
                return self.undefined(obj=obj, name=attribute)
        if kind is LoopContext and attribute in _LOOP_NUMBERS:
            return getattr(obj, attribute)
        return super().getattr(obj, attribute)


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


#: Message shapes, tried in order until the template renders the call: what inference servers send,
#: then arguments left as the JSON strings of the API, then also ``content`` kept (as "") where it was null.
SHAPES = ("parsed", "string-arguments", "keep-content")


@lru_cache(maxsize=32)
def _compile(source: str, lenient: bool) -> jinja2.Template:
    env = _Environment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationTag, jinja2.ext.loopcontrols],
        undefined=jinja2.ChainableUndefined if lenient else jinja2.Undefined,
    )
    env.filters["tojson"] = _tojson
    env.filters.update(_SIZED_FILTERS)
    for name in _UNPINNED_FILTERS:
        env.filters.pop(name, None)
    env.globals["raise_exception"] = _raise_exception
    env.globals["dict"] = _Dict()
    env.globals["namespace"] = _Namespace
    env.globals["range"] = _range
    env.globals.pop("lipsum", None)  # random text: a profile must not change from run to run
    try:
        return env.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise ModelError(f"chat template has a syntax error at line {exc.lineno}: {exc.message}") from None
    except (RecursionError, MemoryError, SyntaxError) as exc:  # expressions nested thousands deep
        raise ModelError(
            f"the chat template cannot be compiled: it is nested too deeply ({type(exc).__name__})"
        ) from None


@dataclass
class ChatTemplate:
    """A chat template: its Jinja source (or named sources), where it came from, and its hash."""

    source: str | dict[str, str]
    origin: str
    special_tokens: dict[str, str] = field(default_factory=dict)
    #: Message shapes to try (a :class:`tokprof.models.base.PromptFormat` member).
    shapes: ClassVar[tuple[str, ...]] = SHAPES
    #: The templates (text, leniency) seen to render the same input the same twice.
    _steady: set[tuple[str, bool]] = field(default_factory=set, init=False, repr=False, compare=False)

    def prepare(self, messages: list[dict], shape: str) -> list[dict]:
        """The neutral messages as the template gets them (:func:`template_messages`)."""
        return template_messages(messages, self, shape)

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
        template_tools: bool | None = None,
        *,
        lenient: bool = False,
    ) -> str:
        """Render a prompt. Errors raised by the template propagate as jinja2 exceptions.

        ``template_tools`` picks the named template as if tools were (True) or were not (False) given;
        by default it follows ``tools``.
        """
        has_tools = bool(tools) if template_tools is None else template_tools
        source = self.select(has_tools)
        template = _compile(source, lenient)
        text = _limited(template, self._variables(messages, tools, add_generation_prompt, day))
        if (source, lenient) not in self._steady:  # the first render of each template is made twice
            again = _limited(template, self._variables(messages, tools, add_generation_prompt, day))
            if again != text:
                raise ModelError(
                    f"the chat template {self.origin} renders the same messages differently twice: its output "
                    "depends on more than its input (a random choice, a clock, a counter), so counts would "
                    "change from run to run"
                )
            self._steady.add((source, lenient))
        return text

    def _variables(self, messages, tools, add_generation_prompt: bool, day: date | None) -> dict:
        pinned = day or DEFAULT_DAY

        def strftime_now(fmt: str) -> str:
            return datetime(pinned.year, pinned.month, pinned.day).strftime(fmt)

        return dict(
            messages=messages,
            tools=tools,
            documents=None,
            add_generation_prompt=add_generation_prompt,
            strftime_now=strftime_now,
            **self.special_tokens,
        )

    def render_prefix(self, messages: list[dict], tools: list[dict] | None, day: date | None = None) -> str:
        """The render of a conversation's first messages, without the generation prompt: strictly,
        or leniently (undefined names chain) when a strict render fails on what the rest of the
        conversation would have given; the empty conversation always leniently, with the template
        picked for the tools."""
        if not messages:
            return self.render([], tools, False, day, lenient=True, template_tools=bool(tools))
        try:
            return self.render(messages, tools, False, day)
        except jinja2.TemplateError:
            return self.render(messages, tools, False, day, lenient=True)

    def tools_head(self, has_tools: bool) -> bool:
        """Whether the template, by its form, reads the tools only in its first statements, which
        set nothing that the rest reads: then a prompt rendered with any tools is what those first
        statements write with them, followed by the same text (see :func:`_tools_head`)."""
        return _tools_head(self.select(has_tools)) is not None

    def render_head(self, messages, tools, add_generation_prompt: bool, day: date | None, template_tools: bool) -> str:
        """What the first statements of the template that read the tools write (:meth:`tools_head`),
        rendered as :meth:`render` would (strictly, with the template ``template_tools`` picks)."""
        head = _tools_head(self.select(template_tools))
        if head is None:
            raise ValueError("the template does not read its tools in a head of its own")
        return _limited(head, self._variables(messages, tools, add_generation_prompt, day))

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

    def generation_is_suffix(self, has_tools: bool) -> bool:
        """Whether the template, by its form, renders any prompt with ``add_generation_prompt`` as
        the same prompt without it followed by a fixed text (see :func:`_generation_is_suffix`)."""
        return _generation_is_suffix(self.select(has_tools), frozenset(self.special_tokens))

    def generation_suffix_key(self, has_tools: bool) -> str | None:
        """The template text picked for these tools when its generation prompt is a fixed suffix
        (:meth:`generation_is_suffix`), else None."""
        return self.select(has_tools) if self.generation_is_suffix(has_tools) else None


class _RunClock(threading.local):
    """The time this thread's renders took in the run under way (:func:`template_run`)."""

    depth: int = 0
    spent: float = 0.0
    limits: Limits | None = None  # read at the run's first render


_RUN = _RunClock()


@contextlib.contextmanager
def template_run() -> Iterator[None]:
    """One run (a profile, a what-if, a check): the renders inside take at most ``run_seconds``
    together, under the limits the environment sets at the run's first render (:class:`Limits`).
    Runs inside a run are part of it."""
    if _RUN.depth == 0:
        _RUN.spent, _RUN.limits = 0.0, None
    _RUN.depth += 1
    try:
        yield
    finally:
        _RUN.depth -= 1
        if _RUN.depth == 0:
            _RUN.limits = None


#: An object's address as Python prints it (``<Cycler object at 0x7f3a...>``): not a function of the input.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+(?=>)")


def _limited(template: jinja2.Template, variables: dict) -> str:
    """Render under the limits (:class:`Limits`, read from the environment at a run's first render,
    or at each render outside a run; once for all the renders inside :func:`held_limits`)."""
    limits = _HELD.limits or _run_limits()
    _BUDGET.limits, _BUDGET.range_left = limits, limits.range_items
    seconds, run_limit = _time_allowed(limits)
    started = time.monotonic()
    try:
        text = _render(template, variables, limits, seconds, run_limit)
    finally:
        _RUN.spent += time.monotonic() - started
    return _ADDRESS.sub(" at 0x0", text) if "0x" in text else text


def _run_limits() -> Limits:
    """The limits of the run under way (read from the environment at its first render), or read now
    outside a run."""
    if _RUN.depth and _RUN.limits is not None:
        return _RUN.limits
    limits = Limits.from_environment()
    if _RUN.depth:
        _RUN.limits = limits
    return limits


def _time_allowed(limits: Limits) -> tuple[float, bool]:
    """The seconds a render may take now, and whether it is the run's time left (rather than
    ``limits.seconds``) that bounds them; the run's error when it has none left."""
    seconds, run_limit = limits.seconds, False
    if _RUN.depth:
        left = limits.run_seconds - _RUN.spent
        if left <= 0:
            raise _run_over(limits)
        if left < seconds:
            seconds, run_limit = left, True
    return seconds, run_limit


def _run_over(limits: Limits) -> TemplateLimitError:
    return _over("its renders in this run took too long together", "run_seconds", f"{limits.run_seconds:g} seconds")


class _Held(threading.local):
    """Inside :func:`held_limits`: whether its memory cap is set (None outside), and its limits."""

    capped: bool | None = None
    limits: Limits | None = None


_HELD = _Held()


@contextlib.contextmanager
def held_limits() -> Iterator[None]:
    """Many small renders under one time limit (``seconds``, for all of them) and one memory cap,
    each set once: setting them costs about as much as a small render (some 25 us). For a caller
    that renders a prompt's windows one after another (:mod:`tokprof.attribution.window_starts`) and that,
    when the limit stops it, has another way; the run's clock still counts every render."""
    if _HELD.capped is not None:
        yield
        return
    limits = _run_limits()
    seconds, run_limit = _time_allowed(limits)  # the renders inside are the run's: its time left bounds them
    alarm = _Alarm(limits, seconds, run_limit) if threading.current_thread() is _MAIN and _HAS_TIMER else None
    try:
        with _memory_cap(limits) as capped:
            _HELD.capped, _HELD.limits = capped, limits
            try:
                yield
            finally:
                if alarm is not None:
                    alarm.stopped = True  # first: from here its signal neither raises nor comes again
                _HELD.capped, _HELD.limits = None, None
                if alarm is not None:
                    alarm.stop()
    finally:
        if alarm is not None:
            alarm.stop()
    if alarm is not None and alarm.fired:  # swallowed every time it came, and the renders finished late
        raise alarm.error()


def _render(template: jinja2.Template, variables: dict, limits: Limits, seconds: float, run_limit: bool) -> str:
    pieces: list[str] = []
    size = 0
    out_of_memory = False
    main = threading.current_thread() is _MAIN  # the guards below are the main thread's (see each)
    held = _HELD.capped is not None  # inside held_limits: its cap and alarm hold for this render
    cap = _lower_data_limit(limits) if main and not held else None
    alarm = _Alarm(limits, seconds, run_limit) if main and _HAS_TIMER and not held else None
    try:
        chunks = template.generate(**variables)
        try:
            while True:  # joined a batch at a time: per-chunk Python work would double the render's cost
                chunk = list(itertools.islice(chunks, 4096))
                if not chunk:
                    break
                batch = "".join(chunk)
                size += len(batch)
                if size > limits.output:
                    raise _over("the prompt it wrote is too long", "output", f"{limits.output:,} characters")
                pieces.append(batch)
        except MemoryError:  # raised below, once the render's frames (and what they hold) are gone
            out_of_memory = True
        except RecursionError:
            raise TemplateLimitError("the chat template went over a limit: it recursed too deeply") from None
        finally:
            if alarm is not None:  # first (no call before it, where a signal's handler could raise)
                alarm.stopped = True
            getattr(chunks, "close", lambda: None)()  # a generator: its frames let go of what they hold
            if alarm is not None:  # the alarm stopped first, then the memory limit set back
                alarm.stop()
        if alarm is not None and alarm.fired:  # swallowed every time it came, and the render finished late
            raise alarm.error()
    finally:
        if cap is not None:
            _restore_data_limit(cap)
    if out_of_memory:
        pieces.clear()
        gc.collect()  # Jinja's rewritten traceback leaves cycles that hold what the render made
        if cap is not None or _HELD.capped:
            raise _memory_over(limits)
        raise TemplateLimitError("the chat template ran out of memory in a render")
    return "".join(pieces)


def _memory_over(limits: Limits) -> TemplateLimitError:
    return _over(
        "a render took more memory than it may", "memory", f"{limits.memory:,} bytes more than the process had"
    )


#: The size of a memory page, for ``/proc/self/statm`` (which counts in pages).
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
#: The main thread, where the memory and time limits are set (the kernel's limit and the timer's
#: signal are the process's).
_MAIN = threading.main_thread()
#: Whether a signal can give a time limit here (Unix).
_HAS_TIMER = hasattr(signal, "setitimer")
#: ``signal.signal`` without its conversions to and from enums (an exception each way for a
#: handler that is a function, half the cost of a render's time limit), where CPython has it.
_set_handler = getattr(signal, "_signal", signal).signal
_SIGALRM = int(getattr(signal, "SIGALRM", 14))

try:
    import resource as _resource  # Unix only
except ImportError:  # pragma: no cover - Windows
    _resource = None  # type: ignore[assignment]
#: The kernel's data limit, where there is one.
_DATA_LIMIT: int | None = getattr(_resource, "RLIMIT_DATA", None)


class _Statm:
    """``/proc/self/statm``, kept open (a read is 5 us, an open and a read 40 us), per process."""

    pid: int = -1
    fd: int = -1


_STATM = _Statm()


def _data_bytes() -> int | None:
    """The process's data and stack memory now (what the kernel's data limit counts, and its stack),
    where ``/proc/self/statm`` tells it; None elsewhere."""
    try:
        if _STATM.pid != os.getpid():  # opened again in a forked child: the parent's file is the parent's
            _STATM.fd, _STATM.pid = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC), os.getpid()
        return int(os.pread(_STATM.fd, 256, 0).split()[5]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def _lower_data_limit(limits: Limits) -> tuple[int, int] | None:
    """Let the process grow its data by at most ``limits.memory`` bytes from now: the kernel's data
    limit (``RLIMIT_DATA``) lowered to what the process has now plus that; an allocation past it is a
    ``MemoryError``, whatever step asked for it. Returns the limits to set back
    (:func:`_restore_data_limit`), or None where there is no such limit or ``/proc/self/statm``. The
    limit is the whole process's: the caller sets it on the main thread only (:func:`_memory_cap`)."""
    if _DATA_LIMIT is None:
        return None
    now = _data_bytes()
    if now is None:
        return None
    soft, hard = _resource.getrlimit(_DATA_LIMIT)
    cap = now + limits.memory
    if soft != _resource.RLIM_INFINITY:
        cap = min(cap, soft)
    if hard != _resource.RLIM_INFINITY:
        cap = min(cap, hard)
    try:
        _resource.setrlimit(_DATA_LIMIT, (cap, hard))
    except (ValueError, OSError):
        return None
    return soft, hard


def _restore_data_limit(limits: tuple[int, int]) -> None:
    if _DATA_LIMIT is not None:  # it is, where _lower_data_limit gave limits to set back
        _resource.setrlimit(_DATA_LIMIT, limits)


@contextlib.contextmanager
def _memory_cap(limits: Limits) -> Iterator[bool]:
    """While inside, the process may grow its data by at most ``limits.memory`` bytes
    (:func:`_lower_data_limit`; yields True). The limit is the whole process's: it is set on the main
    thread only, where every render of the command line, the API's callers and serve's workers runs
    (other threads' allocations meanwhile count against it too, which only matters once a render has
    taken most of it). Elsewhere (another thread, no ``/proc/self/statm`` or ``RLIMIT_DATA``) yields
    False: the per-step sizes are the only bound."""
    cap = _lower_data_limit(limits) if threading.current_thread() is _MAIN else None
    try:
        yield cap is not None
    finally:
        if cap is not None:
            _restore_data_limit(cap)


class _Alarm:
    """A time limit on a render, where a signal can give one (the main thread, on Unix): the timer
    starts when made, :meth:`stop` stops it and puts the signal's previous handler back."""

    __slots__ = ("limits", "run_limit", "fired", "stopped", "previous")

    def __init__(self, limits: Limits, seconds: float, run_limit: bool):
        self.limits, self.run_limit, self.fired, self.stopped = limits, run_limit, False, False
        self.previous = _set_handler(_SIGALRM, self.expired)
        signal.setitimer(signal.ITIMER_REAL, seconds)

    def expired(self, signum: int, frame: object) -> None:
        if self.stopped:  # came as the alarm was being stopped: the render is over, and the handler
            return  # must not raise (stop() would be left half done) nor set the timer again
        self.fired = True
        # raised where the render is; code there that catches every exception could swallow it (seen:
        # a render that ran on for seconds and succeeded), so it comes again until it gets through
        signal.setitimer(signal.ITIMER_REAL, _AGAIN)
        raise self.error()

    def stop(self) -> None:
        self.stopped = True
        signal.setitimer(signal.ITIMER_REAL, 0)
        _set_handler(_SIGALRM, self.previous)

    def error(self) -> TemplateLimitError:
        if self.run_limit:
            return _run_over(self.limits)
        return _over("a render took too long", "seconds", f"{self.limits.seconds:g} seconds")


#: How soon a time limit's signal comes again when the render went on after it (see :class:`_Alarm`).
_AGAIN = 0.05


#: Statements after which the rest of a template cannot see what they did, but by their output.
_SEALED = (
    jinja2.nodes.Assign,
    jinja2.nodes.AssignBlock,
    jinja2.nodes.Macro,
    jinja2.nodes.CallBlock,
    jinja2.nodes.Block,
    jinja2.nodes.Extends,
    jinja2.nodes.Include,
    jinja2.nodes.Import,
    jinja2.nodes.FromImport,
    jinja2.nodes.ScopedEvalContextModifier,
    jinja2.nodes.EvalContextModifier,
)


@lru_cache(maxsize=32)
def _tools_head(source: str) -> jinja2.Template | None:
    """The first top-level statements of the template, up to the last one that reads ``tools``, as a
    template of their own; None unless nothing else reads or sets ``tools`` and those statements
    assign nothing and define nothing (no set, macro, block, import, call block).

    Rendering runs the top-level statements in order and writes what each writes. Statements that
    assign nothing leave the rest of the template nothing but their output (loop variables do not
    outlive their loop; the sandbox lets no list or dict be changed), so the statements after them
    run the same whatever they did, and, not reading ``tools``, the same with any tools. A render
    is then the head's output followed by a text that does not depend on the tools. The head,
    compiled on its own, runs first in a fresh context as it does in the whole template.
    """
    nodes = jinja2.nodes
    env = _compile(source, False).environment
    try:
        tree = env.parse(source)
    except Exception:
        return None
    reads = [i for i, node in enumerate(tree.body) if any(n.name == "tools" for n in node.find_all(nodes.Name))]
    if not reads or any(n.name == "tools" and n.ctx != "load" for n in tree.find_all(nodes.Name)):
        return None
    body = tree.body[: reads[-1] + 1]
    if any(isinstance(node, _SEALED) or any(True for _ in node.find_all(_SEALED)) for node in body):
        return None
    head = nodes.Template(body, lineno=1)
    head.set_environment(env)
    try:
        return env.template_class.from_code(env, env.compile(head), env.make_globals(None), None)
    except Exception:
        return None


#: Names a render gives the template (besides the special tokens), and names Jinja itself provides.
_GIVEN = frozenset({"messages", "tools", "documents", "add_generation_prompt", "strftime_now"})
_JINJA_NAMES = frozenset({"loop", "self", "caller", "varargs", "kwargs", "super"})
#: Tests that depend on their value only.
_PURE_TESTS = frozenset({"defined", "undefined", "none", "true", "false", "boolean", "string", "number"})


@lru_cache(maxsize=32)
def _generation_is_suffix(source: str, special: frozenset) -> bool:
    """Whether the template's only use of ``add_generation_prompt`` is a last top-level
    ``{% if add_generation_prompt %}`` (no elif, no else) that writes fixed text.

    Rendering runs the template's top-level statements in order and writes what each writes. If
    ``add_generation_prompt`` is read nowhere else (and never set), everything before that last
    statement runs and writes the same with it true or false; with it true, the last statement then
    writes its body. "Fixed text" is constants, and ifs whose tests read only constants and names
    that nothing sets or gives (so that they are always undefined), with pure tests (``is defined``,
    ``is false`` ...) and no filters or calls: the same text for every prompt.
    """
    nodes = jinja2.nodes
    try:
        tree = _compile(source, False).environment.parse(source)
    except Exception:
        return False
    if not tree.body or tree.find(nodes.Extends) is not None:
        return False
    last = tree.body[-1]
    if not (
        isinstance(last, nodes.If)
        and isinstance(last.test, nodes.Name)
        and last.test.name == "add_generation_prompt"
        and not last.elif_
        and not last.else_
    ):
        return False
    names = list(tree.find_all(nodes.Name))
    if sum(1 for n in names if n.name == "add_generation_prompt") != 1:
        return False
    bound = {n.name for n in names if n.ctx != "load"}
    known = _GIVEN | _JINJA_NAMES | special | set(_compile(source, False).environment.globals) | bound

    def fixed_test(node) -> bool:
        if isinstance(node, nodes.Const):
            return True
        if isinstance(node, nodes.Name):
            return node.name not in known
        if isinstance(node, (nodes.And, nodes.Or)):
            return fixed_test(node.left) and fixed_test(node.right)
        if isinstance(node, nodes.Not):
            return fixed_test(node.node)
        if isinstance(node, nodes.Test):
            return (
                node.name in _PURE_TESTS
                and not node.args
                and not node.kwargs
                and node.dyn_args is None
                and node.dyn_kwargs is None
                and fixed_test(node.node)
            )
        return False

    def fixed_text(body) -> bool:
        for node in body:
            if isinstance(node, nodes.Output):
                if not all(
                    isinstance(n, nodes.TemplateData)
                    or (isinstance(n, nodes.Const) and isinstance(n.value, (str, int, float, bool, type(None))))
                    for n in node.nodes
                ):
                    return False
            elif isinstance(node, nodes.If):
                if not (
                    fixed_test(node.test)
                    and fixed_text(node.body)
                    and fixed_text(node.else_)
                    and all(fixed_test(e.test) and fixed_text(e.body) for e in node.elif_)
                ):
                    return False
            else:
                return False
        return True

    return fixed_text(last.body)


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
