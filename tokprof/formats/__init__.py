"""Log readers. Each one turns a file into the same neutral :class:`tokprof.trace.Trace`.

A reader module has ``FORMAT`` (its name), ``DESCRIPTION`` (one line, see :func:`describe_formats`),
``sniff(doc) -> bool`` (does this parsed file look like mine?) and ``read(path, doc) -> Trace``.
Formats are tried in the order of :data:`READERS`, most specific first. Readers of agent sessions
(:data:`SESSION_FORMATS`) are found in a directory by content (:mod:`tokprof.formats.discovery`);
the Claude Code and Codex readers also keep ``sessions(directory) -> list[Path]``, the session
files of a directory in their layout.
"""

from __future__ import annotations

import importlib
import os
import stat
import zipfile
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import tokprof.base.bounded as bounded
from tokprof.base.errors import InputError
from tokprof.formats import lookalike
from tokprof.formats.jsonfile import TRUNCATED_LAST_LINE, Document, load
from tokprof.formats.lookalike import Lookalike, is_blank, read_head, starts_like_json
from tokprof.base.text import visible
from tokprof.trace import Call, Trace

if TYPE_CHECKING:
    from tokprof.formats.claude_streamed import CallStream
    from tokprof.formats.discovery import Found

#: Format name -> module, in the order auto-detection tries them.
READERS = {
    "inspect": "tokprof.formats.inspect_ai",
    "gemini-cli": "tokprof.formats.gemini_cli",
    "qwen-code": "tokprof.formats.qwen_code",
    "cline": "tokprof.formats.cline",
    "pi": "tokprof.formats.pi",
    "otel": "tokprof.formats.otel",
    "opencode": "tokprof.formats.opencode",
    "claude-stream-json": "tokprof.formats.claude_stream",
    "claude-code": "tokprof.formats.claude_code",
    "codex": "tokprof.formats.codex",
    "swe-agent": "tokprof.formats.swe_agent",
    "anthropic": "tokprof.formats.anthropic",
    "openai-responses": "tokprof.formats.openai_responses",
    "openai-chat": "tokprof.formats.openai_chat",
}
FORMATS = tuple(READERS)


#: Formats of agent sessions: a directory's files of these formats are its sessions.
SESSION_FORMATS = (
    "claude-code",
    "claude-stream-json",
    "codex",
    "gemini-cli",
    "qwen-code",
    "pi",
    "opencode",
    "cline",
    "swe-agent",
)


def scan_directory(directory: str) -> "Found":
    """A directory's session files, found by content, and its other ``.json``/``.jsonl`` files with
    why they are not read (:mod:`tokprof.formats.discovery`)."""
    from tokprof.formats.discovery import scan

    return scan(directory)


def session_files(directory: str) -> list[tuple[str, Path]]:
    """The session files in a directory (a Claude Code project folder, a Codex sessions tree, CI
    jobs' stream-json outputs), with their format."""
    return scan_directory(directory).sessions


def session_in_folder(path: str) -> str | None:
    """The session file a folder is, when it is one session (a Cline, Roo Code or Kilo Code task
    folder: its ``api_conversation_history.json``); None otherwise."""
    from tokprof.formats.cline import history_file

    return history_file(path) if "://" not in path else None


def reader(name: str) -> ModuleType:
    return importlib.import_module(READERS[name])


def describe_formats() -> str:
    """Every format with its description (errors name the formats only: :func:`not_a_log`)."""
    return "; ".join(f"{name} ({reader(name).DESCRIPTION})" for name in FORMATS)


#: The order formats are named in messages: the plain API logs first, then the agents' own.
LISTED = (
    "openai-chat",
    "anthropic",
    "openai-responses",
    "inspect",
    "claude-code",
    "claude-stream-json",
    "codex",
    "gemini-cli",
    "qwen-code",
    "pi",
    "otel",
    "opencode",
    "cline",
    "swe-agent",
)


def format_names() -> str:
    return ", ".join([name for name in LISTED if name in READERS] + [name for name in FORMATS if name not in LISTED])


def not_a_log(path: str, found: Lookalike | None) -> str:
    """One short line for a file no reader takes: what it looks like, else the formats' names."""
    if found is not None:
        return "not a log format tokprof reads: " + found.phrase(path)
    return f"not a log format tokprof reads (formats: {format_names()}; -i FORMAT forces one)"


def _not_json(path: str) -> Lookalike | None:
    """What a file looks like when it does not even start as JSON (None when it does, or is empty:
    then the JSON error, or "file is empty", says more)."""
    try:
        data = read_head(path)
    except OSError:
        return None
    if is_blank(data) or starts_like_json(data):
        return None
    return lookalike.of_text(os.path.basename(path), data)


def _of_doc(path: str, doc: Document) -> Lookalike | None:
    name = os.path.basename(path)
    try:
        if doc.lines is not None:
            return lookalike.of_lines(name, [value for _, value in doc.lines.head(50)])
        return lookalike.of_json(name, doc.value)
    except Exception:  # telling what a file looks like never fails
        return None


def _is_zip(path: str) -> bool:
    try:
        return os.path.isfile(path) and zipfile.is_zipfile(path)
    except OSError:  # unreadable: load() says so
        return False


def _starts_like_zip(path: str) -> bool:
    try:
        with bounded.open_input(path) as f:
            return f.read(4) == b"PK\x03\x04"
    except OSError:
        return False


def _sniff(module: ModuleType, doc: Document) -> bool:
    """A reader's guess; a guess that fails on odd input is a no, never a traceback."""
    try:
        return bool(module.sniff(doc))
    except Exception:
        return False


def read_trace(path: str, input_format: str | None = None) -> Trace:
    """Read a log in the named format, or in the first format that recognises it."""
    if input_format is not None and input_format not in READERS:
        raise InputError(path, None, f"unknown input format {input_format!r} (known: {', '.join(FORMATS)})")
    path = session_in_folder(path) or path
    if _is_zip(path):
        if input_format not in (None, "inspect"):
            raise InputError(path, None, f"a zip file, not a log of format {input_format}")
        return reader("inspect").read_zip(path)
    if input_format in (None, "opencode") and reader("opencode").is_sqlite(path):  # opencode.db
        trace = reader("opencode").read_db(path)
        _shown_safely(trace)
        return trace
    if _starts_like_zip(path):
        raise InputError(path, None, "a zip file that cannot be read (truncated or damaged?)")
    try:
        doc = load(path)
    except InputError:
        found = _not_json(path) if input_format is None else None
        if found is not None:
            raise InputError(path, None, not_a_log(path, found)) from None
        raise
    with doc:  # a JSONL file is read as its reader consumes its lines
        trace = _module_for(path, doc, input_format).read(path, doc)
    if doc.truncated_line is not None:
        trace.note("truncated-line", TRUNCATED_LAST_LINE, f"line {doc.truncated_line}")
    _shown_safely(trace)
    return trace


def _module_for(path: str, doc: Document, input_format: str | None) -> ModuleType:
    """The reader of a loaded log: the one named, else the first that recognises it."""
    if input_format is not None:
        return reader(input_format)
    if os.path.basename(path) == "api_conversation_history.json":  # a Cline-family task's, by its name
        return reader("cline")
    module = next((reader(name) for name in FORMATS if _sniff(reader(name), doc)), None)
    if module is None:
        raise InputError(path, None, not_a_log(path, _of_doc(path, doc)))
    return module


def stream_calls(path: str, input_format: str | None = None) -> "CallStream | None":
    """The calls of a log given as it is read (:class:`tokprof.formats.claude_streamed.CallStream`),
    for a log whose reader can give them so: a Claude Code session file (a ``.jsonl`` one, unless the
    format is named). None for any other log, or one that cannot be loaded (:func:`read_trace` says
    why), with nothing read past its first lines."""
    if input_format not in (None, "claude-code") or "://" in path:
        return None
    path = session_in_folder(path) or path
    if input_format is None and not path.endswith(".jsonl"):
        return None  # Claude Code writes .jsonl: any other file is not loaded twice (a JSON document whole)
    if not _regular(path) or _is_zip(path) or _starts_like_zip(path):
        return None  # a pipe is read once: whole, where a stream that gives up could not read it again
    if input_format is None and reader("opencode").is_sqlite(path):
        return None
    try:
        doc = load(path)
    except InputError:
        return None
    try:
        module = _module_for(path, doc, input_format)
    except InputError:
        module = None
    if module is None or module.FORMAT != "claude-code" or doc.lines is None:
        doc.close()
        return None
    from tokprof.formats.claude_streamed import CallStream

    return CallStream(path, doc)


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _shown_safely(trace: Trace) -> None:
    """The names a trace takes from the log and only shows (models, the session, threads, request ids,
    places) with control characters and lone surrogates escaped (:func:`tokprof.base.text.visible`): they
    are printed, written as UTF-8 and used as keys, never tokenized. Every reader's trace passes here
    (a stream's calls one at a time: :func:`call_shown_safely`)."""
    trace.model = _safe(trace.model)
    trace.session = _safe(trace.session)
    for call in trace.calls:
        call_shown_safely(call)


def call_shown_safely(call: Call) -> None:
    """A call's names as :func:`_shown_safely` shows them."""
    call.model = _safe(call.model)
    call.request_id = _safe(call.request_id)
    call.thread = visible(call.thread)
    call.where = visible(call.where)


def _safe(value: str | None) -> str | None:
    return visible(value) if isinstance(value, str) else value
