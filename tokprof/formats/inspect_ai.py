"""Inspect AI eval logs: the ``.json`` log and the ``.eval`` zip.

**Layout.** A ``.json`` log is one object ``{"version", "status", "eval": {"model", "created",
"packages", ...}, "samples": [...]}``. A ``.eval`` log is a zip holding ``header.json`` (the same
object without samples; an unfinished log has ``_journal/start.json`` instead) and one member per
sample, ``samples/<id>_epoch_<n>.json``. Logs converted to *chunked* samples hold
``samples/<id>_epoch_<n>/sample.json`` plus ``events/``, ``messages/`` and ``attachments/`` chunk
members (lists, named by the index of their first item); they are read too. Where a zip holds a
member name twice, the last entry wins, as in Inspect. Newer Inspect versions compress members with
Zstandard (zip method 93): Python 3.14 reads them, older Pythons need the ``zstandard`` package
(used when installed; without it the error says so): `formats/zipmember.py` reads the members.

**Calls.** Every ``model`` event of every sample is one call, sample by sample, in event order,
named like ``samples[0].events[12]`` (``samples/1_epoch_1.json: events[12]`` in a ``.eval``).
Events nested in the deprecated ``events`` lists of ``tool`` and ``subtask`` events (older logs) are
visited where they occur; an event repeated with the same ``uuid`` counts once. Samples of very old
logs keep their events in ``transcript.events`` (and attachments in ``transcript.content``).

* A model event with an ``error`` and no output choices is skipped (note ``error-response``).
* A model event answered from Inspect's local cache (``cache: "read"``) is skipped: no request was
  sent (note ``inspect-cache``).
* A ``pending`` model event (still in flight when the log was written) is kept: its prompt was
  sent; usage may be missing (note ``pending-call``).
* The calls of failed attempts of a retried sample (``error_retries[].events``) are not read
  (note ``error-retries``).

**Attachments.** A string that is exactly ``attachment://<key>`` is replaced by the sample's
``attachments[<key>]`` (a hash in logs, an index in chunked samples), wherever tokprof reads it:
message text, reasoning, tool-call arguments, tool errors, tool descriptions and parameters. A
reference with no entry is an error naming the place. Since Inspect 0.3.186 an event's ``input``
may be replaced by ``input_refs``, ``[start, end)`` ranges into the sample's message pool
``events_data.messages``; they are expanded (a range outside the pool is an error).

**Prompt.** The prompt is built from Inspect's own ``input`` and ``tools``, not from ``call.request``
(the raw provider request). ``call.request`` is provider-shaped (OpenAI Chat, Responses,
Anthropic and Google requests differ), it is absent unless the run logged model API calls (only
on errors by default since Inspect 0.3.184), and since 0.3.186 its messages are pooled; ``input``
is always there and always in one shape, so every call of a log is read the same way. On the
OpenAI Chat corpus log, ``call.request`` gives exactly the messages and tools built from ``input``.

* Roles system, user, assistant and tool are kept. Content is a string or a list of content items:
  ``text`` items are joined with newlines; ``reasoning`` items on assistant messages become
  ``reasoning_content`` (a ``redacted`` one is encrypted and dropped: note
  ``redacted-reasoning``); image, audio, video, document, data and server-side ``tool_use``
  items are dropped and their tokens are not counted (note ``content-not-text``). The older
  assistant field ``reasoning`` (a string) is read as reasoning too.
* Assistant ``tool_calls`` ``[{id, function, arguments}]`` become ``{"id", "type": "function",
  "function": {"name": function, "arguments": json.dumps(arguments)}}`` (the JSON Inspect sends).
* A tool message keeps ``tool_call_id``; when it carries an ``error`` (or the older
  ``tool_error``), the error message is its content, as Inspect sends it.
* Tools ``[{name, description, parameters}]`` become ``{"type": "function", "function": {...}}``
  with null-valued schema keys dropped (Inspect drops them when it sends tools). A tool the
  provider runs itself (``options.__internal_tool_type__``: web search, code execution) is
  profiled as a function definition (note ``server-tool``). An empty tool list is no tools.
* The call's response is ``output.choices[0].message``.

**Usage.** The provider's own usage in ``call.response`` is preferred when it is recognisable:
OpenAI Chat (``prompt_tokens`` includes cached tokens, ``prompt_tokens_details.cached_tokens``
and ``cache_write_tokens``); Anthropic (prompt = ``input_tokens`` + ``cache_creation_input_tokens``
+ ``cache_read_input_tokens``); OpenAI Responses (``input_tokens`` includes cached,
``input_tokens_details.cached_tokens``); Google (``usage_metadata.prompt_token_count`` includes
``cached_content_token_count``; output = candidates + thoughts). Otherwise Inspect's
``output.usage`` (``input_tokens``, ``input_tokens_cache_read``, ``input_tokens_cache_write``,
``output_tokens``, ``total_tokens``) is read, and whether its ``input_tokens`` includes the cached
tokens is decided per call:

1. no cache reads or writes: prompt = ``input_tokens`` (both readings agree);
2. else if ``total_tokens`` = input + cache read + cache write + output, the cache is excluded;
   if it equals input + output, the cache is included;
3. else if the cache counts exceed ``input_tokens``, they are excluded;
4. else by Inspect version (``eval.packages.inspect_ai``): since 0.3.184 Inspect subtracts cached
   tokens for every provider (excluded); before it, Anthropic's ``input_tokens`` excluded them and
   every other provider (OpenAI Chat and Responses, Grok, Google, ...) reported the provider's
   whole prompt (included); a log without a version is read by the older rule.

Excluded: prompt = input + cache read + cache write; included: prompt = ``input_tokens``. The corpus
log (Inspect 0.3.95, OpenAI) reports ``input_tokens`` equal to the provider's ``prompt_tokens``.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, TypeVar

from tokprof.base.errors import InputError
from tokprof.formats.fields import (
    expect_list,
    expect_object,
    nonempty_string,
    object_or_string,
    objects,
    optional_object,
    optional_string,
    string,
)
from tokprof.formats.jsonfile import Document
from tokprof.formats.reader import LogFormat, Reader, Record, read_whole
from tokprof.formats.jsonfile import kind_of as _kind
from tokprof.formats.neutral import (
    anthropic_usage,
    cache_creation,
    check_count,
    check_messages,
    check_text,
    check_tool_calls,
    check_tools,
    check_usage,
    parse_day,
    parse_time,
)
from tokprof.formats.shared_prompts import SharedPrompts
from tokprof.formats.zipmember import json_member
from tokprof.trace import Call, Trace, Usage

T = TypeVar("T")

FORMAT = "inspect"
DESCRIPTION = "Inspect AI eval logs: a .json log {version, status, eval, samples} or a .eval zip"

_ATTACHMENT = re.compile(r"attachment://(\w+)")
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
#: Inspect versions from this one on report ``input_tokens`` without the cached tokens.
_NORMALISED_USAGE = (0, 3, 184)
_HEADERS = ("header.json", "_journal/start.json")
_NON_TEXT = (
    "content that is not text (images, audio, video, documents, provider data, server-side tool "
    "use) is dropped: its tokens are not counted"
)


@dataclass
class _Log:
    """What the log's header says."""

    model: str | None = None
    created: Any = None
    version: tuple[int, int, int] | None = None


@dataclass
class _Sample:
    """One sample's events and what resolves their references."""

    where: str  # the sample: "samples[0]" or "samples/1_epoch_1.json"
    prefix: str  # the prefix of its fields: "samples[0]." or "samples/1_epoch_1.json: "
    label: str  # "sample 1, epoch 1"
    events: list[tuple[str, Any]]  # (where, event), nested events flattened in order
    pool: list[tuple[str, Any]] = field(default_factory=list)  # events_data.messages
    attachments: dict = field(default_factory=dict)
    retried: bool = False
    shared: SharedPrompts = field(default_factory=SharedPrompts)  # each model event holds its whole input


@dataclass
class _Context:
    path: str
    trace: Trace
    log: _Log
    sample: _Sample
    first: int = 0  # the index of the sample's first call in the log
    calls: list[Call] = field(default_factory=list)  # the sample's calls

    def place(self, where: str) -> str:
        return f"{where} ({self.sample.label})" if self.sample.label else where

    def text(self, where: str, value: str) -> str:
        """A string, with an attachment reference replaced by the attachment."""
        match = _ATTACHMENT.fullmatch(value)
        if match is None:
            return check_text(self.path, where, value)
        key = match.group(1)
        attachments = self.sample.attachments
        if not isinstance(attachments, dict) or key not in attachments:
            raise InputError(self.path, where, f"{value!r} has no entry in the sample's attachments")
        return string(self.path, f"{self.sample.prefix}attachments.{key}", attachments[key])

    def resolve(self, where: str, value: Any) -> Any:
        """A JSON value with every attachment reference in it replaced."""
        if isinstance(value, str):
            return self.text(where, value)
        if isinstance(value, list):
            return [self.resolve(f"{where}[{i}]", item) for i, item in enumerate(value)]
        if isinstance(value, dict):
            return {key: self.resolve(f"{where}.{key}", item) for key, item in value.items()}
        return value


# -- detection and entry points ----------------------------------------------------------------


def sniff(doc: Document) -> bool:
    value = doc.value
    if not isinstance(value, dict) or not isinstance(value.get("eval"), dict):
        return False
    return "samples" in value or ("version" in value and "status" in value)


def read(path: str, doc: Document) -> Trace:
    """A .json log read whole (:class:`EvalReader` fed every sample)."""
    return read_whole(EvalReader(path, doc), sample_records(doc))


def read_zip(path: str) -> Trace:
    """Read a ``.eval`` log (a zip) whole."""
    return read_whole(EvalReader(path, None), ())


def sample_records(doc: Document) -> Iterator[Record]:
    """A .json log's samples, one record each (the document is parsed whole, as JSON is: its samples
    are read one at a time). None when the log has no list of samples (:class:`EvalReader` says why)."""
    value = doc.value if doc.lines is None else None
    samples = value.get("samples") if isinstance(value, dict) and "eval" in value else None
    if isinstance(samples, list):
        for sample in samples:
            yield Record(sample)


class EvalReader(Reader):
    """An eval log read as a fold over its samples: each sample's calls given once it is read (a
    .json log's samples fed one at a time; a .eval zip's sample members read one at a time when the
    reader is finished, as it opens the zip itself)."""

    def __init__(self, path: str, doc: Document | None) -> None:
        self.path = path
        self.doc = doc
        self.trace = Trace(path=path, format=f"{FORMAT}/{'eval' if doc is None else 'json'}")
        self.log: _Log | None = None
        self.samples = 0
        self.calls = 0
        self.models: set[str] = set()

    def feed(self, record: Record) -> Iterable[Call]:
        log = self.log or self.start()
        where = f"samples[{self.samples}]"
        self.samples += 1
        return self.read_sample(_guarded(self.path, lambda: _json_sample(self.path, where, record.value)), log)

    def start(self) -> _Log:
        """The log's header, checked (a .json log's)."""
        path, doc = self.path, self.doc
        value = doc.value if doc is not None else None
        if doc is None or doc.lines is not None or not isinstance(value, dict) or "eval" not in value:
            raise InputError(
                path,
                None,
                "not an Inspect eval log: expected one JSON object with 'eval' and 'samples' (or a .eval zip)",
            )
        log = self.log = _log_info(path, "", value)
        self.trace.model = log.model
        samples = value.get("samples")
        if samples is not None:
            expect_list(path, "samples", samples, "a list of samples")
        if not samples:
            raise _no_samples(path, value.get("status"))
        return log

    def read_sample(self, sample: _Sample, log: _Log) -> list[Call]:
        ctx = _Context(self.path, self.trace, log, sample, first=self.calls)
        _guarded(self.path, lambda: _read_sample(ctx))
        self.calls += len(ctx.calls)
        self.models.update(call.model for call in ctx.calls if call.model)
        return ctx.calls

    def finish(self) -> Iterable[Call]:
        if self.doc is None:
            return self.archive_calls()
        if self.log is None:
            self.start()
        self.done()
        return ()

    def done(self) -> None:
        trace = self.trace
        if not self.calls:
            skipped = [note.code for note in trace.notes if note.code in ("error-response", "inspect-cache")]
            why = f" (skipped: {', '.join(skipped)})" if skipped else ""
            raise InputError(
                self.path,
                None,
                f"no model call to profile: the samples hold no model event that reached the provider{why}",
            )
        if trace.model is None:
            trace.model = self.models.pop() if len(self.models) == 1 else None

    def archive_calls(self) -> Iterator[Call]:
        """A .eval log's calls, its sample members read one at a time."""
        path = self.path
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, NotImplementedError, ValueError, EOFError) as exc:
            raise InputError(path, None, f"not a readable zip file ({exc})") from None
        except OSError as exc:
            raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
        with archive:
            samples = _archive_samples(path, archive, self.trace)
            while True:
                found = _guarded(path, lambda: next(samples, None))
                if found is None:
                    break
                sample, log = found
                yield from self.read_sample(sample, log)
        self.done()


def _guarded(path: str, read: Callable[[], T]) -> T:
    try:
        return read()
    except RecursionError:
        raise InputError(path, None, "nested too deeply") from None


def _no_samples(path: str, status: Any) -> InputError:
    return InputError(
        path,
        None,
        f"the log has no samples (status {status!r}): it was written without samples "
        "(--no-log-samples) or before any sample finished, so there is no model call to profile",
    )


def _log_info(path: str, prefix: str, header: Any) -> _Log:
    header = expect_object(path, prefix.rstrip(": ") or None, header, "the log header, an object")
    spec = expect_object(path, prefix + "eval", header.get("eval"), "the eval spec, an object")
    model = spec.get("model")
    packages = spec.get("packages")
    version = packages.get("inspect_ai") if isinstance(packages, dict) else None
    match = _VERSION.match(version) if isinstance(version, str) else None
    return _Log(
        model=model if isinstance(model, str) else None,
        created=spec.get("created"),
        version=tuple(int(part) for part in match.groups()) if match else None,  # type: ignore[arg-type]
    )


# -- samples -----------------------------------------------------------------------------------


def _json_sample(path: str, where: str, sample: Any, prefix: str | None = None) -> _Sample:
    """A sample as the .json log (and a .eval sample member) holds it."""
    prefix = f"{where}." if prefix is None else prefix
    sample = expect_object(path, where, sample, "a sample object")
    events_field, events, attachments = "events", sample.get("events"), sample.get("attachments")
    transcript = sample.get("transcript")
    if events is None and isinstance(transcript, dict):  # logs before events and attachments were fields
        events_field, events, attachments = "transcript.events", transcript.get("events"), transcript.get("content")
    if events is None:
        events = []
    events = expect_list(path, prefix + events_field, events, "a list of events")
    attachments = optional_object(path, prefix + "attachments", attachments)
    roots = [(f"{prefix}{events_field}[{j}]", event) for j, event in enumerate(events)]
    return _Sample(
        where=where,
        prefix=prefix,
        label=_label(sample),
        events=_flatten(roots),
        pool=_pool(path, prefix, sample.get("events_data")),
        attachments=attachments or {},
        retried=_retried(sample),
    )


def _label(sample: dict) -> str:
    """How notes name a sample: "sample 1, epoch 1"."""
    sample_id, epoch = sample.get("id"), sample.get("epoch")
    if not isinstance(sample_id, (str, int)):
        return ""
    return f"sample {sample_id}" + (f", epoch {epoch}" if isinstance(epoch, int) else "")


def _retried(sample: dict) -> bool:
    retries = sample.get("error_retries")
    return isinstance(retries, list) and any(isinstance(r, dict) and r.get("events") for r in retries)


def _pool(path: str, prefix: str, events_data: Any) -> list[tuple[str, Any]]:
    if events_data is None:
        return []
    events_data = expect_object(path, prefix + "events_data", events_data)
    messages = events_data.get("messages")
    if messages is None:
        return []
    messages = expect_list(path, prefix + "events_data.messages", messages, "a list of messages")
    return [(f"{prefix}events_data.messages[{k}]", message) for k, message in enumerate(messages)]


def _flatten(roots: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Events in order, with the events nested in older tool and subtask events after their parent."""
    out: list[tuple[str, Any]] = []
    stack = [iter(roots)]
    while stack:
        try:
            where, event = next(stack[-1])
        except StopIteration:
            stack.pop()
            continue
        out.append((where, event))
        nested = event.get("events") if isinstance(event, dict) else None
        if isinstance(nested, list) and nested:
            stack.append(iter([(f"{where}.events[{j}]", child) for j, child in enumerate(nested)]))
    return out


def _read_sample(ctx: _Context) -> None:
    seen: set[str] = set()
    for where, event in ctx.sample.events:
        event = expect_object(ctx.path, where, event, "an event object")
        if event.get("event") != "model":
            continue
        uuid = event.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:
                continue
            seen.add(uuid)
        _model_event(ctx, where, event)
    if ctx.sample.retried:
        ctx.trace.note(
            "error-retries",
            "a sample was retried after an error: the model calls of its failed attempts "
            "(error_retries[].events) are not profiled",
            ctx.sample.where,
        )


# -- one model event -> one call ---------------------------------------------------------------


def _model_event(ctx: _Context, where: str, event: dict) -> None:
    if event.get("error") and not _choices(event):
        ctx.trace.note(
            "error-response",
            "the response is an error, so the call is skipped (an error is not billed as a completed call)",
            ctx.place(where),
        )
        return
    if event.get("cache") == "read":
        ctx.trace.note(
            "inspect-cache",
            "the output came from Inspect's local cache: no request was sent, so the call is skipped",
            ctx.place(where),
        )
        return
    if event.get("pending"):
        ctx.trace.note(
            "pending-call",
            "the model call was still in flight when the log was written: its prompt is "
            "profiled, but reported usage may be missing",
            ctx.place(where),
        )
    model = optional_string(ctx.path, where + ".model", event.get("model"))
    ctx.calls.append(
        Call(
            index=ctx.first + len(ctx.calls),
            messages=ctx.sample.shared.prompt(_prompt(ctx, where, event)),
            tools=ctx.sample.shared.tools(_tools(ctx, where + ".tools", event.get("tools"))),
            model=model,
            reported=_usage(ctx, where, event, model),
            day=parse_day({"timestamp": event.get("timestamp")}) or parse_day({"created": ctx.log.created}),
            where=where,
            response=_response(ctx, where + ".output.choices[0].message", event),
            time=parse_time(event.get("timestamp")),
        )
    )


def _choices(event: dict) -> list:
    output = event.get("output")
    choices = output.get("choices") if isinstance(output, dict) else None
    return choices if isinstance(choices, list) else []


def _prompt(ctx: _Context, where: str, event: dict) -> list[dict]:
    found = _input(ctx, where, event)
    if not found:
        raise InputError(ctx.path, where + ".input", "empty: a call needs a prompt")
    messages = [_message(ctx, at, message) for at, message in found]
    return _checked(ctx.path, where + ".", messages, [at for at, _ in found])


def _input(ctx: _Context, where: str, event: dict) -> list[tuple[str, Any]]:
    """The event's input messages, each with its place: inline, or ranges into the message pool."""
    refs = event.get("input_refs")
    if refs is None:
        messages = event.get("input")
        messages = expect_list(ctx.path, where + ".input", messages, "a list of messages")
        return [(f"{where}.input[{i}]", message) for i, message in enumerate(messages)]
    refs = expect_list(ctx.path, where + ".input_refs", refs, "a list of [start, end] ranges")
    pool = ctx.sample.pool
    out: list[tuple[str, Any]] = []
    for k, ref in enumerate(refs):
        ok = isinstance(ref, list) and len(ref) == 2 and all(type(n) is int for n in ref)
        if not ok or not 0 <= ref[0] <= ref[1] <= len(pool):
            raise InputError(
                ctx.path,
                f"{where}.input_refs[{k}]",
                f"expected a range [start, end] inside the sample's message pool (events_data.messages, "
                f"{len(pool)} messages), found {json.dumps(ref)[:40]}",
            )
        out.extend(pool[ref[0] : ref[1]])
    return out


def _checked(path: str, prefix: str, messages: list[dict], places: list[str]) -> list[dict]:
    """The neutral checks, with their errors naming the message's place in the log."""
    try:
        return check_messages(path, prefix, messages)
    except InputError as exc:
        match = re.match(re.escape(prefix) + r"messages\[(\d+)\](.*)", exc.where or "")
        if match is None:
            raise
        raise InputError(path, places[int(match.group(1))] + match.group(2), exc.what) from None


def _message(ctx: _Context, where: str, message: Any, quiet: bool = False) -> dict:
    message = expect_object(ctx.path, where, message, "a message object")
    role = message.get("role")
    text, reasoning = _content(ctx, where + ".content", message.get("content"), quiet)
    out: dict[str, Any] = {"role": role, "content": text}
    if role == "assistant":
        if reasoning:
            out["reasoning_content"] = "\n".join(reasoning)
        elif isinstance(message.get("reasoning"), str):  # older logs: a field of the message
            out["reasoning_content"] = ctx.text(where + ".reasoning", message["reasoning"])
        if message.get("tool_calls"):
            out["tool_calls"] = _tool_calls(ctx, where + ".tool_calls", message["tool_calls"])
    if role == "tool":
        out["tool_call_id"] = message.get("tool_call_id")
        error = _tool_error(ctx, where, message)
        if error is not None:
            out["content"] = error
    return out


def _content(ctx: _Context, where: str, content: Any, quiet: bool) -> tuple[str | None, list[str]]:
    """The text of a message's content (text items joined by newlines) and its reasoning."""
    if content is None:
        return None, []
    if isinstance(content, str):
        return ctx.text(where, content), []
    texts: list[str] = []
    reasoning: list[str] = []
    for at, item in objects(
        ctx.path, where, content, "a content item object", listed="a string or a list of content items"
    ):
        kind = item.get("type")
        if kind == "text":
            texts.append(ctx.text(at + ".text", string(ctx.path, at + ".text", item.get("text"))))
        elif kind == "reasoning" and item.get("redacted"):
            if not quiet:
                ctx.trace.note(
                    "redacted-reasoning",
                    "reasoning the provider returned encrypted (redacted) is dropped: its tokens are not counted",
                    ctx.place(at),
                )
        elif kind == "reasoning":
            reasoning.append(ctx.text(at + ".reasoning", string(ctx.path, at + ".reasoning", item.get("reasoning"))))
        elif isinstance(kind, str):
            if not quiet:
                ctx.trace.note("content-not-text", _NON_TEXT, ctx.place(f"{at} ({kind})"))
        else:
            raise InputError(ctx.path, at + ".type", f"expected the content item's type, a string, found {_kind(kind)}")
    return "\n".join(texts), reasoning


def _tool_calls(ctx: _Context, where: str, calls: Any) -> list[dict]:
    out = []
    for at, call in objects(ctx.path, where, calls, "a tool call object", listed="a list of tool calls"):
        name = call.get("function")
        if not isinstance(name, str):
            raise InputError(ctx.path, at + ".function", f"expected the tool's name, a string, found {_kind(name)}")
        arguments = object_or_string(
            ctx.path, at + ".arguments", ctx.resolve(at + ".arguments", call.get("arguments", {}))
        )
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments)
        out.append({"id": call.get("id"), "type": "function", "function": {"name": name, "arguments": arguments}})
    return out


def _tool_error(ctx: _Context, where: str, message: dict) -> str | None:
    error = message.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return ctx.text(where + ".error.message", error["message"])
    if isinstance(message.get("tool_error"), str):  # older logs
        return ctx.text(where + ".tool_error", message["tool_error"])
    return None


def _tools(ctx: _Context, where: str, tools: Any) -> list[dict] | None:
    if tools is None or tools == []:
        return None
    tools = expect_list(ctx.path, where, tools, "a list of tool definitions")
    out = []
    for k, tool in enumerate(tools):
        at = f"{where}[{k}]"
        tool = expect_object(ctx.path, at, tool, "a tool object")
        name = nonempty_string(ctx.path, at + ".name", tool.get("name"))
        function: dict[str, Any] = {"name": name}
        if tool.get("description") is not None:
            function["description"] = ctx.resolve(at + ".description", tool["description"])
        if tool.get("parameters") is not None:
            function["parameters"] = _without_nulls(ctx.resolve(at + ".parameters", tool["parameters"]))
        options = tool.get("options")
        if isinstance(options, dict) and options.get("__internal_tool_type__"):
            ctx.trace.note(
                "server-tool",
                "a tool the provider runs itself (web search, code execution) is profiled as a "
                "function definition, which may not be how the provider counts it",
                ctx.place(f"{at} ({name})"),
            )
        out.append({"type": "function", "function": function})
    return check_tools(ctx.path, where.removesuffix("tools"), out)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def _response(ctx: _Context, where: str, event: dict) -> dict | None:
    """The assistant message the call produced (``output.choices[0].message``)."""
    choices = _choices(event)
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    converted = _message(ctx, where, message, quiet=True)
    if converted.get("tool_calls"):
        converted["tool_calls"] = check_tool_calls(ctx.path, where + ".tool_calls", converted["tool_calls"], set())
    return converted


# -- usage -------------------------------------------------------------------------------------


def _usage(ctx: _Context, where: str, event: dict, model: str | None) -> Usage | None:
    call = event.get("call")
    if isinstance(call, dict):
        usage = _provider_usage(ctx.path, where + ".call.response", call.get("response"))
        if usage is not None and usage.prompt is not None:
            return usage
    output = event.get("output")
    usage = output.get("usage") if isinstance(output, dict) else None
    return _inspect_usage(ctx, where + ".output.usage", usage, model)


def _provider_usage(path: str, where: str, response: Any) -> Usage | None:
    """The usage of a raw provider response, when its shape is recognised."""
    if not isinstance(response, dict):
        return None
    usage = response.get("usage")
    if isinstance(usage, dict):
        at = where + ".usage"
        if "prompt_tokens" in usage:
            return _openai_chat_usage(path, at, usage)
        if "input_tokens" in usage:
            anthropic = response.get("type") == "message" or any(
                key in usage for key in ("cache_creation_input_tokens", "cache_read_input_tokens")
            )
            return _anthropic_usage(path, at, usage) if anthropic else _responses_usage(path, at, usage)
    for key in ("usage_metadata", "usageMetadata"):
        if isinstance(response.get(key), dict):
            return _google_usage(path, f"{where}.{key}", response[key])
    return None


def _openai_chat_usage(path: str, where: str, usage: dict) -> Usage | None:
    """OpenAI Chat: ``prompt_tokens`` is the whole prompt, cached tokens included."""
    return check_usage(
        path, where, usage, "prompt_tokens", "prompt_tokens_details", "completion_tokens", write="cache_write_tokens"
    )


def _anthropic_usage(path: str, where: str, usage: dict) -> Usage:
    """Anthropic: ``input_tokens`` excludes the cache reads and writes, reported beside it."""
    fresh = check_count(path, where + ".input_tokens", usage.get("input_tokens"))
    write = check_count(path, where + ".cache_creation_input_tokens", usage.get("cache_creation_input_tokens"))
    read = check_count(path, where + ".cache_read_input_tokens", usage.get("cache_read_input_tokens"))
    split = anthropic_usage({"cache_creation_input_tokens": write, **cache_creation(path, where, usage)})
    return Usage(
        prompt=None if fresh is None else fresh + (write or 0) + (read or 0),
        cache_read=read,
        cache_write=write,
        output=check_count(path, where + ".output_tokens", usage.get("output_tokens")),
        cache_write_5m=split.cache_write_5m,
        cache_write_1h=split.cache_write_1h,
    )


def _responses_usage(path: str, where: str, usage: dict) -> Usage | None:
    """OpenAI Responses: ``input_tokens`` is the whole prompt, cached tokens included."""
    return check_usage(
        path, where, usage, "input_tokens", "input_tokens_details", "output_tokens", write="cache_write_tokens"
    )


def _google_usage(path: str, where: str, metadata: dict) -> Usage:
    """Google: ``prompt_token_count`` is the whole prompt; output is candidates plus thoughts."""

    def count(snake: str, camel: str) -> int | None:
        key = snake if snake in metadata else camel
        return check_count(path, f"{where}.{key}", metadata.get(key))

    candidates, thoughts = (
        count("candidates_token_count", "candidatesTokenCount"),
        count("thoughts_token_count", "thoughtsTokenCount"),
    )
    return Usage(
        prompt=count("prompt_token_count", "promptTokenCount"),
        cache_read=count("cached_content_token_count", "cachedContentTokenCount"),
        cache_write=None,
        output=None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0),
    )


def _inspect_usage(ctx: _Context, where: str, usage: Any, model: str | None) -> Usage | None:
    """Inspect's ``ModelUsage``, with the cached tokens added back when ``input_tokens`` excludes them."""
    if usage is None:
        return None
    usage = expect_object(ctx.path, where, usage)
    counts = {
        key: check_count(ctx.path, f"{where}.{key}", usage.get(key))
        for key in (
            "input_tokens",
            "output_tokens",
            "total_tokens",
            "input_tokens_cache_read",
            "input_tokens_cache_write",
        )
    }
    fresh, read, write = counts["input_tokens"], counts["input_tokens_cache_read"], counts["input_tokens_cache_write"]
    prompt = fresh
    if fresh is not None and _excludes_cache(counts, ctx.log.version, model):
        prompt = fresh + (read or 0) + (write or 0)
    return Usage(prompt=prompt, cache_read=read, cache_write=write, output=counts["output_tokens"])


def _excludes_cache(counts: dict, version: tuple[int, int, int] | None, model: str | None) -> bool:
    """Does Inspect's ``input_tokens`` leave out the cache reads and writes? (The rule in the docstring.)"""
    fresh = counts["input_tokens"] or 0
    cached = (counts["input_tokens_cache_read"] or 0) + (counts["input_tokens_cache_write"] or 0)
    if cached == 0:
        return False
    total, output = counts["total_tokens"], counts["output_tokens"] or 0
    if total:
        if total == fresh + cached + output:
            return True
        if total == fresh + output:
            return False
    if cached > fresh:
        return True
    if version is not None and version >= _NORMALISED_USAGE:
        return True
    provider = (model or "").split("/")[0].lower()
    return provider == "anthropic" or bool(counts["input_tokens_cache_write"])


# -- the .eval zip -----------------------------------------------------------------------------


def _archive_samples(path: str, archive: zipfile.ZipFile, trace: Trace) -> Iterator[tuple[_Sample, _Log]]:
    """A .eval log's samples, in the order of their members, each read when it is asked for."""
    members = {info.filename: info for info in archive.infolist()}  # a repeated name: the last entry wins
    header_name = next((name for name in _HEADERS if name in members), None)
    monoliths, chunked = _sample_members(members)
    if header_name is None and not monoliths and not chunked:
        raise InputError(
            path,
            None,
            "a zip file, but not an Inspect .eval log (it has no header.json, _journal/start.json or samples/ members)",
        )
    header = json_member(path, archive, members[header_name]) if header_name else {"eval": {}}
    log = _log_info(path, f"{header_name}: " if header_name else "", header)
    trace.model = log.model
    if not monoliths and not chunked:
        raise _no_samples(path, header.get("status") if isinstance(header, dict) else None)
    position = {name: i for i, name in enumerate(members)}
    for name in sorted(monoliths + chunked, key=position.__getitem__):
        if name in monoliths:
            yield _json_sample(path, name, json_member(path, archive, members[name]), prefix=f"{name}: "), log
        else:
            yield _chunked_sample(path, archive, members, name), log


def _sample_members(members: dict[str, zipfile.ZipInfo]) -> tuple[list[str], list[str]]:
    """The members holding whole samples, and the shells of chunked samples."""
    chunked = [name for name in members if re.fullmatch(r"samples/[^/]+/sample\.json", name)]
    inside = tuple(name[: -len("sample.json")] for name in chunked)
    monoliths = [
        name
        for name in members
        if name.startswith("samples/") and name.endswith(".json") and not name.startswith(inside)
    ]
    return monoliths, chunked


def _chunked_sample(
    path: str, archive: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], shell_name: str
) -> _Sample:
    """A chunked sample: its shell, and its events, message pool and attachments in chunks."""
    base = shell_name[: -len("sample.json")]
    shell = json_member(path, archive, members[shell_name])
    shell = expect_object(path, shell_name, shell, "a sample object")
    events = _chunks(path, archive, members, base + "events/")
    pool = _chunks(path, archive, members, base + "messages/")
    attachments = {str(i): text for i, (_, text) in enumerate(_chunks(path, archive, members, base + "attachments/"))}
    return _Sample(
        where=base.rstrip("/"),
        prefix=base,
        label=_label(shell),
        events=_flatten(events),
        pool=pool,
        attachments=attachments,
        retried=_retried(shell),
    )


def _chunks(
    path: str, archive: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo], prefix: str
) -> list[tuple[str, Any]]:
    """The items of a chunked sequence, in order, each with its place (``member: [i]``)."""
    starts = sorted(
        (int(name[len(prefix) : -len(".json")]), name)
        for name in members
        if name.startswith(prefix)
        and name.endswith(".json")
        and re.fullmatch(r"[0-9]+", name[len(prefix) : -len(".json")])
    )
    out: list[tuple[str, Any]] = []
    for _, name in starts:
        items = json_member(path, archive, members[name])
        items = expect_list(path, name, items, "a list (a chunk of the sequence)")
        out.extend((f"{name}: [{i}]", item) for i, item in enumerate(items))
    return out


def is_zip_file(path: str) -> bool:
    """Whether a file is a zip archive (a ``.eval`` log), by its bytes."""
    try:
        return os.path.isfile(path) and zipfile.is_zipfile(path)
    except OSError:  # unreadable: loading it says so
        return False


LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "eval",
    sniff,
    EvalReader,
    records=sample_records,
    opens=is_zip_file,
    records_what="per-call usage, prompts and tool definitions of each model event",
)
