"""What a file that no reader takes looks like, in a few words, for a short error or a skip reason.

Everything here is cheap: it looks at the first bytes of a file, or at a JSON value already parsed,
never at a whole large file. Each function returns a :class:`Lookalike` or None (nothing to say).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tokprof.base.bounded as bounded

#: How much of a file is read to tell what it looks like.
HEAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class Lookalike:
    what: str  # "an Aider chat history (.aider.chat.history.md)"
    hint: str | None = None  # what to do instead: "use tokprof tools --tools FILE"

    def phrase(self, path: str) -> str:
        """``looks like <what>[: <hint>]``, with FILE in the hint replaced by the path."""
        hint = f": {self.hint.replace('FILE', path)}" if self.hint else ""
        return f"looks like {self.what}{hint}"


TOOLS_HINT = "use tokprof tools --tools FILE"
CLAUDE_RESULT = Lookalike(
    "Claude Code's --output-format json result (the run's totals, no calls)",
    "save --output-format stream-json --verbose to profile its calls",
)


def read_head(path: str | Path, size: int = HEAD_BYTES) -> bytes:
    """The first bytes of a file (raises OSError)."""
    with bounded.open_input(path) as f:  # a FIFO: never waited for
        return f.read(size)


def starts_like_json(data: bytes) -> bool:
    """Whether the text starts as a JSON object or list does (after a BOM and white space); a TOML
    table (``[project]``) starts with a bracket too, but a word follows it, not a JSON value."""
    text = data.removeprefix(b"\xef\xbb\xbf").lstrip()
    if text[:1] == b"{":
        return True
    if text[:1] != b"[":
        return False
    rest = text.lstrip(b"[ \t\r\n")
    if not rest or rest[:1] in b'{"]-0123456789':
        return True
    return re.match(rb"(true|false|null)\s*[,\]]", rest) is not None


def is_blank(data: bytes) -> bool:
    return not data.removeprefix(b"\xef\xbb\xbf").strip()


# -- content that is not JSON ----------------------------------------------------------------------
MAGIC = (
    (b"\x1f\x8b", "a gzip-compressed file", "decompress it first (gunzip)"),
    (b"\x28\xb5\x2f\xfd", "a zstd-compressed file", "decompress it first (unzstd)"),
    (b"BZh", "a bzip2-compressed file", "decompress it first (bunzip2)"),
    (b"\xfd7zXZ\x00", "an xz-compressed file", "decompress it first (unxz)"),
    (b"SQLite format 3\x00", "an SQLite database", None),
    (b"%PDF", "a PDF document", None),
    # UTF-16 text (what Windows PowerShell's ">" writes), byte order marks first; UTF-32's before UTF-16's
    (b"\xff\xfe\x00\x00", "UTF-32 text", "convert it to UTF-8 first (iconv -f UTF-32 -t UTF-8)"),
    (b"\x00\x00\xfe\xff", "UTF-32 text", "convert it to UTF-8 first (iconv -f UTF-32 -t UTF-8)"),
    (b"\xff\xfe", "UTF-16 text", "convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)"),
    (b"\xfe\xff", "UTF-16 text", "convert it to UTF-8 first (iconv -f UTF-16 -t UTF-8)"),
)
AIDER_MARK = re.compile(r"^# aider chat started at ", re.MULTILINE)
TOML_TABLE = re.compile(r"^\s*\[\[?[A-Za-z0-9_.\-\" ]+\]\]?\s*(#.*)?$")
TOML_KEY = re.compile(r"^\s*[A-Za-z0-9_.\-\"]+\s*=\s*\S")
YAML_KEY = re.compile(r"^\s*(- )?[A-Za-z0-9_.\-\"' ]+:(\s|$)")
YAML_ITEM = re.compile(r"^\s*- \S")
SUFFIXES = {
    ".csv": "CSV",
    ".tsv": "TSV (tab-separated values)",
    ".toml": "TOML",
    ".yaml": "YAML",
    ".yml": "YAML",
    ".md": "Markdown text",
    ".markdown": "Markdown text",
    ".html": "HTML",
    ".htm": "HTML",
    ".xml": "XML",
    ".txt": "plain text",
    ".log": "plain text",
}


def of_text(name: str, data: bytes) -> Lookalike:
    """What the first bytes of a file that is not JSON look like: always something ("plain text")."""
    for magic, what, hint in MAGIC:
        if data.startswith(magic):
            return Lookalike(what, hint)
    if b"\x00" in data[:8192]:
        return Lookalike("a binary file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start < len(data) - 4:  # not a character cut by the end of the head
            return Lookalike("a binary file (not UTF-8 text)")
        text = data[: exc.start].decode("utf-8-sig", "replace")
    lower = name.lower()
    if lower.endswith(".aider.chat.history.md") or AIDER_MARK.search(text[:4096]):
        return Lookalike("an Aider chat history (.aider.chat.history.md)")
    suffix = Path(lower).suffix
    if suffix in SUFFIXES:
        return Lookalike(SUFFIXES[suffix])
    stripped = text.lstrip()
    start = stripped[:200].lower()
    if start.startswith(("<!doctype html", "<html")):
        return Lookalike("HTML")
    if start.startswith("<?xml"):
        return Lookalike("XML")
    lines = text.splitlines()
    if len(data) >= HEAD_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the head ends inside the file: its last line may be cut
    lines = [line for line in lines[:50] if line.strip() and not line.lstrip().startswith("#")]
    if _toml(lines):
        return Lookalike("TOML")
    if stripped.startswith("---") or _yaml(lines):
        return Lookalike("YAML")
    separator = _table(lines)
    if separator:
        return Lookalike("CSV" if separator == "," else "TSV (tab-separated values)")
    if stripped.startswith("# ") or re.search(r"^#{1,6} \S", text[:4096], re.MULTILINE):
        return Lookalike("Markdown text")
    return Lookalike("plain text")


def _toml(lines: list[str]) -> bool:
    tables = sum(1 for line in lines if TOML_TABLE.match(line))
    keys = sum(1 for line in lines if TOML_KEY.match(line))
    return keys > 0 and tables + keys >= max(1, len(lines) * 3 // 4)


def _yaml(lines: list[str]) -> bool:
    matched = sum(1 for line in lines if YAML_KEY.match(line) or YAML_ITEM.match(line))
    return matched > 0 and matched >= max(1, len(lines) * 2 // 3) and any(YAML_KEY.match(line) for line in lines)


def _table(lines: list[str]) -> str | None:
    """The separator of a CSV or TSV table: every line holds as many of it, and at least one."""
    if len(lines) < 2:
        return None
    for separator in ("\t", ",", ";"):
        counts = {line.count(separator) for line in lines[:20]}
        if len(counts) == 1 and counts.pop() > 0:
            return "\t" if separator == "\t" else ","
    return None


# -- JSON that no reader recognises ----------------------------------------------------------------
def of_json(name: str, value: Any) -> Lookalike | None:
    """What a parsed JSON value (a document, or the list of a JSONL file's values) looks like."""
    if isinstance(value, dict):
        for key in ("history", "events"):
            if _openhands(value.get(key)):
                return Lookalike("an OpenHands trajectory (a list of events)")
        if _swe_agent_demonstration(value):
            return Lookalike("an SWE-agent demonstration (a history without trajectory steps: not a run)")
        tools = _tools_of(value)
        if tools is not None:
            return tools
        if value.get("type") == "result" and ("total_cost_usd" in value or "num_turns" in value):
            return CLAUDE_RESULT
        return None
    if isinstance(value, list):
        if _openhands(value):
            return Lookalike("an OpenHands trajectory (a list of events)")
        if value and all(_is_tool(item) for item in value[:50]):
            return Lookalike("a tools file (a list of tool definitions)", TOOLS_HINT)
    return None


def of_lines(name: str, values: list[Any]) -> Lookalike | None:
    """What the values of a JSONL file look like (the first is usually enough)."""
    if len(values) == 1:
        return of_json(name, values[0])
    if values and _openhands(values):
        return Lookalike("OpenHands events (one per line)")
    return None


def _swe_agent_demonstration(value: dict) -> bool:
    """An SWE-agent demonstration file: a ``history`` of ``{role, content, agent}`` items and no steps
    (a trajectory with steps is read: :mod:`tokprof.formats.swe_agent`)."""
    history = value.get("history")
    return (
        "trajectory" not in value
        and isinstance(history, list)
        and bool(history)
        and all(isinstance(item, dict) and "role" in item and "agent" in item for item in history[:20])
    )


def _openhands(events: Any) -> bool:
    if not isinstance(events, list) or not events:
        return False
    sample = events[:50]
    found = sum(
        1
        for e in sample
        if isinstance(e, dict)
        and ("action" in e or "observation" in e)
        and ("source" in e or "id" in e or "timestamp" in e)
    )
    return found * 2 >= len(sample)


def _is_tool(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    body = item["function"] if isinstance(item.get("function"), dict) else item
    return isinstance(body.get("name"), str) and any(
        isinstance(body.get(key), dict) for key in ("parameters", "input_schema", "inputSchema")
    )


def _tools_of(value: dict) -> Lookalike | None:
    """A tools/list result (``{"tools": [...]}``, or the JSON-RPC response around it)."""
    if "messages" in value or "input" in value:
        return None  # a request body that carries tools
    result = value.get("result")
    tools = result.get("tools") if isinstance(result, dict) else value.get("tools")
    if isinstance(tools, list) and tools and all(_is_tool(item) for item in tools[:50]):
        return Lookalike("a tools file (an MCP tools/list result)", TOOLS_HINT)
    return None


# -- the start of a large JSON document (not parsed) -------------------------------------------------
def of_json_head(name: str, data: bytes) -> Lookalike | None:
    """A guess from the keys near the start of a JSON document too large to parse for a skip reason."""
    text = data.decode("utf-8", "replace")
    keys = set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:', text))
    if {"version", "status", "eval"} <= keys:
        return Lookalike("an Inspect AI eval log", "profile it on its own: tokprof profile FILE")
    if {"action", "observation"} <= keys or ("action" in keys and "source" in keys):
        return Lookalike("an OpenHands trajectory (a list of events)")
    if "inputSchema" in keys or ("input_schema" in keys and "messages" not in keys):
        return Lookalike("a tools file", TOOLS_HINT)
    if "messages" in keys or "input" in keys:
        return Lookalike("a log of model requests", "profile it on its own: tokprof profile FILE")
    return None
