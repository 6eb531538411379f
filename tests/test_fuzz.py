"""A fuzzer of the log readers (#14): mutants of small valid logs of every format, fixed seed.

Every seed is a hand-made valid log (the builders of the ``test_format_*`` files, the fixtures);
every mutant is made from one by a deterministic mutation: cut, bytes flipped, inserted or deleted,
lines repeated or swapped, or one JSON value replaced (a wrong type, a huge number, nesting
thousands deep, inside a JSON string too, lone surrogates, control characters and escape
sequences, Rich markup, a newline and a GitHub workflow command, null, empty and huge strings,
duplicate keys, a key dropped). Each is profiled in-process, to a JSON file and as a table, and
must end cleanly: exit code 0 or 2; on 2 one line ``tokprof: error: ...`` on standard error and no
output file; on 0 valid JSON whose buckets are non-negative and add up to each call's total; and
nothing from the log on standard output as a raw control character.

A new reader gets the same treatment by adding a seed to :data:`SEEDS` (a test checks that every
format has one). ``TOKPROF_FUZZ_MUTANTS`` sets how many mutants each seed gets (default below).
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import sqlite3
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest

import test_format_anthropic as anthropic_log
import test_format_claude_code as claude_log
import test_format_claude_print as stream_log
import test_format_codex as codex_log
import test_format_gemini_cli as gemini_log
import test_format_pi as pi_log
import test_format_qwen_code as qwen_log
import test_format_inspect as inspect_log
import test_format_openai_responses as responses_log
import test_format_cline as cline_log
import test_format_opencode as opencode_log
import test_format_openhands as openhands_log
import test_format_kimi as kimi_log
import test_format_copilot_cli as copilot_log
import test_format_aider as aider_log
import test_format_crush as crush_log
import test_format_otel as otel_log
import test_format_swe_agent as swe_log
import test_format_amp as amp_log
import test_format_codebuff as codebuff_log
import test_format_continue as continue_log
import test_format_cursor as cursor_log
import test_format_cursor_agent as cursor_agent_log
import test_format_droid as droid_log
import test_format_goose as goose_log
import test_format_hermes as hermes_log
import test_format_zed as zed_log
from conftest import CHATML, FIXTURES, train_tiny_tokenizer, write_json
from tokprof.frontends.cli import main
from tokprof.formats import FORMATS

SEED = 14
#: 8 a seed in the test suite (every seed, every kind of mutation many times over the seeds); a deeper run sets
#: TOKPROF_FUZZ_MUTANTS (24 was the default: 460 mutants, each profiled twice, a sixth of the suite's time).
MUTANTS_PER_SEED = int(os.environ.get("TOKPROF_FUZZ_MUTANTS") or 8)
FEW = 8  # the mutants of each reader added by #48.1 (second group)


# -- seeds: small valid logs of every format ---------------------------------------------------------
def _jsonl(rows: list) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def _json(value: Any) -> bytes:
    return json.dumps(value, indent=1).encode()


def _codex() -> list:
    count = codex_log.Counter()
    return [
        codex_log.meta(instructions="Be brief."),
        codex_log.context(),
        codex_log.user("list files"),
        count(100, output=30, cached=64, reasoning=20),
        codex_log.think("Listing"),
        codex_log.call("c1"),
        codex_log.result("c1", "a.txt\nb.txt"),
        count(140, output=12),
        codex_log.say("Two files."),
        codex_log.line("compacted", {"message": "Listed two files."}),
        codex_log.user("and now?"),
        count(60, output=5),
        codex_log.say("Done."),
    ]


def _responses() -> list:
    records = responses_log.chained_records()
    records[2]["response"] = responses_log.stream_of(responses_log.RESPONSES[2])
    return records


def _eval(log: dict) -> bytes:
    buffer = io.BytesIO()
    header = {key: value for key, value in log.items() if key != "samples"}
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for sample in log["samples"]:
            archive.writestr(f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(sample))
        archive.writestr("header.json", json.dumps(header))
    return buffer.getvalue()


@dataclass(frozen=True)
class Seed:
    format: str
    name: str  # the file name: its extension matters to detection
    data: Callable[[], bytes]
    #: mutants of this seed (TOKPROF_FUZZ_MUTANTS, when set, for every seed): the later agents' readers
    #: share the suite's time with fewer each (their stores are mutated cell by cell, every run reads one)
    mutants: int = MUTANTS_PER_SEED


SEEDS = [
    Seed("openai-chat", "transcript.json", lambda: (FIXTURES / "good_transcript.json").read_bytes()),
    Seed("openai-chat", "records.jsonl", lambda: (FIXTURES / "good_records.jsonl").read_bytes()),
    Seed("openai-chat", "records.json", lambda: (FIXTURES / "good_records_list.json").read_bytes()),
    Seed("anthropic", "claude-trace.jsonl", lambda: _jsonl(anthropic_log.claude_trace_lines())),
    Seed("openai-responses", "responses.jsonl", lambda: _jsonl(_responses())),
    Seed("inspect", "log.json", lambda: _json(inspect_log.inspect_log())),
    Seed("inspect", "log.eval", lambda: _eval(inspect_log.inspect_log())),
    Seed("claude-code", "session.jsonl", lambda: _jsonl(claude_log.split_response() + claude_log.compacted()[4:])),
    Seed("claude-stream-json", "run.jsonl", lambda: _jsonl(stream_log.run_lines())),
    Seed("codex", "rollout-2025-09-25T09-49-46-x.jsonl", lambda: _jsonl(_codex())),
    Seed(
        "gemini-cli", "session-2026-03-26T04-33-b36c9e17.json", lambda: _json(gemini_log.session(gemini_log.messages()))
    ),
    Seed(
        "gemini-cli",
        "session-2026-03-26T04-33-s2.jsonl",
        lambda: _jsonl([{"sessionId": "s2", "projectHash": "p"}, *gemini_log.messages(), {"$rewindTo": "g2"}]),
    ),
    Seed("pi", "2026-06-05_sess-1.jsonl", lambda: _jsonl(pi_log.v3_lines())),
    Seed("pi", "old.jsonl", lambda: _jsonl(pi_log.old_lines())),
    Seed("qwen-code", "qs-1.jsonl", lambda: _jsonl(qwen_log.lines())),
    Seed("otel", "trace.json", lambda: _json(otel_log.two_calls())),
    Seed("opencode", "run.jsonl", lambda: _jsonl(opencode_log.run_events())),
    Seed("openhands", "trajectory.json", lambda: _json(openhands_log.events())),
    Seed(
        "kimi-code", "wire.jsonl", lambda: _jsonl(kimi_log.code_agent("Hi.", [(kimi_log.code_usage(900, 9, 50), "B0")]))
    ),
    Seed("kimi-cli", "wire.jsonl", lambda: _jsonl(kimi_log.cli_rows())),
    Seed("copilot-cli", "events.jsonl", lambda: _jsonl(copilot_log.events())),
    Seed("aider", ".aider.chat.history.md", lambda: aider_log.HISTORY.encode()),
    Seed("crush", "crush.db", crush_log.store_bytes),
    Seed("cline", "api_conversation_history.json", lambda: _json(cline_log.cline_task()[0])),
    Seed("swe-agent", "inst-0x.traj", lambda: _json(swe_log.v0_traj())),
    Seed("swe-agent", "inst-1x.traj", lambda: _json(swe_log.v1_traj())),
    Seed("amp", "T-1.json", lambda: _json(amp_log.thread()), mutants=FEW),
    Seed("droid", "s-1.jsonl", lambda: _jsonl(droid_log.lines()), mutants=FEW),
    Seed("codebuff", "chat-messages.json", lambda: _json(codebuff_log.chat()), mutants=FEW),
    Seed("continue", "c-1.json", lambda: _json(continue_log.session()), mutants=FEW),
    Seed("goose", "sessions.db", lambda: _store(goose_log.write_store), mutants=FEW),
    Seed("hermes", "state.db", lambda: _store(hermes_log.write_store), mutants=FEW),
    Seed("kilo-cli", "kilo.db", lambda: _store(opencode_log.write_db), mutants=FEW),
    Seed("cursor", "state.vscdb", lambda: _store(cursor_log.write_store), mutants=FEW),
    Seed("cursor-agent", "t-1.jsonl", lambda: _jsonl(cursor_agent_log.lines()), mutants=FEW),
    Seed(
        "zed", "threads.db", lambda: _store(lambda path: zed_log.write_store(path, "json", as_text=True)), mutants=FEW
    ),
]


def test_every_format_has_a_seed():
    assert {seed.format for seed in SEEDS} == set(FORMATS)


# -- values a mutation puts in a log -------------------------------------------------------------------
class Raw:
    """JSON text written as it is (what json.dumps cannot write: nesting thousands deep, duplicate keys)."""

    def __init__(self, text: str):
        self.text = text


DEEP = "[" * 3000 + "]" * 3000
STRANGE_STRINGS = [
    "",
    "\ud800",
    "a\udfffb",
    "\x1b[31mred\x1b[0m\x07",
    "\x1b]8;;http://x\x07link\x1b]8;;\x07",
    "\r\rover",
    "\u202eevil\u202c",
    "[/bold]",
    "[bold red]loud[/]",
    "name\n::error::pwned",
    "tab\tand\x00nul",
    "\x9b2J",
    "x" * 200_000,
    "attachment://missing",
    "data: {}",
    'event: error\ndata: {"type": "error"}\n\n',
    '{"type": "error"}',
    "[" * 3000,
    DEEP,
    '{"a": ' + DEEP + "}",
]
ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    -0.0,
    10**12 + 1,
    int("9" * 4300),
    float("nan"),
    float("inf"),
    1e308,
    [],
    {},
    [None],
    {"": None},
    Raw(DEEP),
    Raw("{" * 0 + '{"a":' * 3000 + "1" + "}" * 3000),
]


def _odd_value(rng: random.Random) -> Any:
    if rng.random() < 0.5:
        return rng.choice(STRANGE_STRINGS)
    return rng.choice(ODD_VALUES)


def dump(value: Any) -> str:
    """JSON text of a value that may hold :class:`Raw` parts and :class:`Pairs` objects."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, Pairs):
        return "{" + ", ".join(json.dumps(k) + ": " + dump(v) for k, v in value.pairs) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(json.dumps(k) + ": " + dump(v) for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dump(v) for v in value) + "]"
    return json.dumps(value)  # NaN and Infinity as Python writes them


class Pairs:
    """An object with a key given twice."""

    def __init__(self, pairs: list[tuple[str, Any]]):
        self.pairs = pairs


# -- mutations -----------------------------------------------------------------------------------------
def _places(value: Any, path: tuple = ()) -> list[tuple]:
    """Every place in a JSON value: a path of keys and indexes."""
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _places(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _places(item, path + (index,))
    return out


def _get(value: Any, path: tuple) -> Any:
    for step in path:
        value = value[step]
    return value


def _replace(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    parent = _get(value, path[:-1])
    parent[path[-1]] = new
    return value


def _inner(text: str) -> tuple[str, Any] | None:
    """The JSON a string holds, when it holds some: itself (a body saved as text, tool-call arguments)
    or a server-sent-event data line."""
    if text.lstrip().startswith(("{", "[")):
        try:
            return "json", json.loads(text)
        except (ValueError, RecursionError):
            return None
    if text.lstrip().startswith(("event:", "data:")):
        return "sse", text
    return None


def _mutate_inner(kind: str, value: Any, rng: random.Random) -> tuple[str, str]:
    """A string holding JSON, with a value inside it changed."""
    if kind == "json":
        changed, what = mutate_value(value, rng)
        return dump(changed), f"inside its JSON: {what}"
    lines = value.split("\n")
    data = [i for i, line in enumerate(lines) if line.startswith("data:") and line[5:].strip().startswith("{")]
    if not data:
        return value[: rng.randrange(len(value) + 1)], "cut the stream"
    i = rng.choice(data)
    changed, what = mutate_value(json.loads(lines[i][5:]), rng)
    lines[i] = "data: " + dump(changed)
    return "\n".join(lines), f"inside stream line {i + 1}: {what}"


def mutate_value(value: Any, rng: random.Random) -> tuple[Any, str]:
    """One JSON value changed at a random place (strings that hold JSON are changed inside too)."""
    places = _places(value)
    place = rng.choice(places[1:] or places)
    current = _get(value, place)
    inner = _inner(current) if isinstance(current, str) else None
    choice = rng.random()
    if inner is not None and choice < 0.6:
        new, what = _mutate_inner(*inner, rng)
        what = f"at {place}, {what}"
    elif choice < 0.5:
        new = _odd_value(rng)
        what = f"replace {place} with {dump(new)[:30]!r}"
    elif choice < 0.6:
        other = rng.choice(places)
        new = json.loads(json.dumps(_get(value, other)))
        what = f"replace {place} with the value at {other}"
    elif choice < 0.7 and isinstance(current, str):
        new = current + rng.choice(STRANGE_STRINGS)
        what = f"append to the string at {place}"
    elif choice < 0.78 and isinstance(current, dict) and current:
        key = rng.choice(list(current))
        new = Pairs(list(current.items()) + [(key, _odd_value(rng))])
        what = f"duplicate key {key!r} at {place}"
    elif choice < 0.86 and place and isinstance(_get(value, place[:-1]), dict):
        del _get(value, place[:-1])[place[-1]]
        return value, f"drop {place}"
    elif choice < 0.93 and not isinstance(current, str):
        new = dump(current)  # a value saved as text
        what = f"save {place} as JSON text"
    else:
        new = Raw("[" * 3000 + dump(current) + "]" * 3000)
        what = f"nest {place} 3000 deep"
    return _replace(value, place, new), what


def mutate_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    choice = rng.random()
    size = len(data)
    if choice < 0.3:
        cut = rng.randrange(size)
        return data[:cut], f"cut at byte {cut}"
    if choice < 0.5:
        at = rng.randrange(size)
        return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1 :], f"flip a bit of byte {at}"
    if choice < 0.7:
        at = rng.randrange(size)
        junk = rng.choice([b"\x00", b"\xff\xfe", b"\x1b[2J", b"\n", b"}", b'"', b"\\", b"\xed\xa0\x80", b"\r\n\r\n"])
        return data[:at] + junk + data[at:], f"insert {junk!r} at byte {at}"
    if choice < 0.85:
        at = rng.randrange(size)
        length = rng.randrange(1, 64)
        return data[:at] + data[at + length :], f"delete {length} bytes at {at}"
    lines = data.split(b"\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if rng.random() < 0.5:
        lines.insert(j, lines[i])
        return b"\n".join(lines), f"repeat line {i + 1} at {j + 1}"
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines), f"swap lines {i + 1} and {j + 1}"


def mutate_json_text(data: bytes, name: str, rng: random.Random) -> tuple[bytes, str]:
    """A JSON value in the file changed: one line's in a JSONL file, else the document's."""
    if name.endswith(".jsonl"):
        lines = data.decode().split("\n")
        numbered = [i for i, line in enumerate(lines) if line.strip()]
        i = rng.choice(numbered)
        value, what = mutate_value(json.loads(lines[i]), rng)
        lines[i] = dump(value)
        return "\n".join(lines).encode(), f"line {i + 1}: {what}"
    value, what = mutate_value(json.loads(data), rng)
    return dump(value).encode(), what


def _store(write: Callable[[Path], None]) -> bytes:
    """An agent's SQLite store, as bytes (written in a temporary folder)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "store.db"
        write(path)
        return path.read_bytes()


def mutate_store(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A JSON or token cell of an SQLite store changed, or the store's bytes."""
    if rng.random() < 0.3:
        return mutate_bytes(data, rng)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "store.db"
        path.write_bytes(data)
        db = sqlite3.connect(path)
        cells = [
            (table, column, required, rowid, value)
            for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            for column, required in [(r[1], r[3]) for r in db.execute(f"PRAGMA table_info({table})") if not r[5]]
            for rowid, value in db.execute(f"SELECT rowid, {column} FROM {table}")
            if isinstance(value, str) and value[:1] in ("[", "{") or isinstance(value, int)  # not "": in "[{"
        ]
        if not cells:  # nothing but blobs (Zed's compressed threads)
            db.close()
            return mutate_bytes(data, rng)
        table, column, required, rowid, value = rng.choice(cells)
        if isinstance(value, int):
            new: Any = _odd_value(rng)
            new = new if isinstance(new, (int, float, str)) and not isinstance(new, bool) else None
            new = -1 if new is None and required else new
            new = new if not isinstance(new, int) or abs(new) < 2**63 else str(new)
            new = new.encode("utf-8", "replace").decode() if isinstance(new, str) else new
            what = f"{table}.{column} of row {rowid} set to {str(new)[:40]!r}"
        else:
            changed, what = mutate_json_text(value.encode(), "cell.json", rng)
            new, what = changed.decode("utf-8", "replace"), f"{table}.{column} of row {rowid}: {what}"
        db.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (new, rowid))
        db.commit()
        db.close()
        return path.read_bytes(), what


def mutate_zip(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A member of a zip changed (its JSON), or the zip's bytes."""
    if rng.random() < 0.3:
        return mutate_bytes(data, rng)
    source = zipfile.ZipFile(io.BytesIO(data))
    names = source.namelist()
    target = rng.choice(names)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for member in names:
            content = source.read(member)
            if member == target:
                if rng.random() < 0.8:
                    value, what = mutate_value(json.loads(content), rng)
                    content = dump(value).encode()
                else:
                    content, what = mutate_bytes(content, rng)
            archive.writestr(member, content)
    return buffer.getvalue(), f"{target}: {what}"


def mutant(seed: Seed, rng: random.Random) -> tuple[bytes, str]:
    """A seed with one mutation, sometimes two (the second on JSON that still parses)."""
    data = seed.data()
    if seed.name.endswith(".eval"):
        return mutate_zip(data, rng)
    if seed.name.endswith((".db", ".vscdb")):
        return mutate_store(data, rng)
    if rng.random() < 0.3 or seed.name.endswith(".md"):  # a Markdown log (aider's): its bytes
        return mutate_bytes(data, rng)
    data, what = mutate_json_text(data, seed.name, rng)
    if rng.random() < 0.3:
        try:
            data, again = mutate_json_text(data, seed.name, rng)
            what = f"{what}; then {again}"
        except (ValueError, RecursionError):  # the first made JSON this cannot change again (nested too deeply)
            pass
    return data, what


def _mutants() -> list[tuple[str, Seed, int]]:
    chosen = os.environ.get("TOKPROF_FUZZ_MUTANTS")
    return [
        (f"{seed.name}-{n}", seed, n) for seed in SEEDS for n in range(MUTANTS_PER_SEED if chosen else seed.mutants)
    ]


def _make(seed: Seed, n: int) -> tuple[bytes, str]:
    return mutant(seed, random.Random(f"{SEED}-{seed.name}-{n}"))


# -- running one mutant ------------------------------------------------------------------------------
_RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def fuzz_model(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("fuzz-model")
    train_tiny_tokenizer().save(str(directory / "tokenizer.json"))
    write_json(directory / "tokenizer_config.json", {"chat_template": CHATML, "eos_token": "<|im_end|>"})
    return directory


def check_run(args: list[str], capsys, output: Path | None, what: str) -> int:
    code = main(args)
    out, err = capsys.readouterr()
    assert code in (0, 2), f"{what}: exit {code}: {err[-2000:]}"
    assert "Traceback" not in err, what
    assert not _RAW_CONTROL.search(out), f"{what}: a raw control character on standard output"
    if os.environ.get("GITHUB_ACTIONS") == "true":
        ours = re.sub(r"^::error title=tokprof::.*\n", "", out, flags=re.M)  # tokprof's own annotation of an error
        assert not re.search(r"^[ \t]*(::|##\[)", ours, re.M), f"{what}: a workflow command on standard output"
    if code == 2:
        assert err.startswith("tokprof: error: ") and err.count("\n") == 1, f"{what}: {err[:2000]!r}"
        assert not _RAW_CONTROL.search(err), what
        if output is not None:
            assert not output.exists(), f"{what}: an output file left after an error"
    elif output is not None:
        profile = json.loads(output.read_text(encoding="utf-8"))
        for call in profile["calls"]:
            assert all(value >= 0 for value in call["buckets"].values()), what
            assert sum(call["buckets"].values()) == call["total"], what
    return code


@pytest.mark.parametrize("name, seed, n", _mutants(), ids=[name for name, _, _ in _mutants()])
def test_mutant(name, seed, n, tmp_path, capsys, fuzz_model):
    data, mutation = _make(seed, n)
    what = f"{name} ({seed.format}: {mutation})"
    path = tmp_path / seed.name
    path.write_bytes(data)
    output = tmp_path / "profile.json"
    common = ["profile", str(path), "--model", str(fuzz_model), "--no-progress"]
    code = check_run([*common, "-f", "json", "-o", str(output)], capsys, output, what)
    assert check_run(common, capsys, None, what) == code, f"{what}: the table and the JSON disagree"


def test_the_seeds_are_valid(tmp_path, capsys, fuzz_model):
    for seed in SEEDS:
        path = tmp_path / seed.name
        path.write_bytes(seed.data())
        code = main(["profile", str(path), "--model", str(fuzz_model), "-f", "json", "--no-progress"])
        out, err = capsys.readouterr()
        assert code == 0, f"{seed.name}: {err}"
        assert json.loads(out)["source"]["format"].split("/")[0] == seed.format


# -- costly mutants (#33): inputs whose cost once grew with the square of their size -----------------
#: A string whose nesting check once took time quadratic in its length: deep enough to be scanned,
#: then an unterminated string of escaped quotes.
QUADRATIC = "[" * 201 + '"' + '\\"' * 20_000
MANY = 500  # messages in one prompt: rendering every prefix would render ~125,000 messages (minutes, not a second)


def _largest_list(value: Any) -> tuple | None:
    lists = [place for place in _places(value) if isinstance(_get(value, place), list) and _get(value, place)]
    return max(lists, key=lambda place: len(_get(value, place)), default=None)


def mutate_costly(value: Any, kind: str, rng: random.Random) -> tuple[Any, str]:
    """``quadratic``: a tool call's arguments (else any string) replaced with :data:`QUADRATIC`;
    ``many``: the largest list (a prompt's messages, mostly) repeated to :data:`MANY` items."""
    if kind == "many":
        place = _largest_list(value)
        if place is None:
            return value, "no list to repeat"
        items = _get(value, place)
        return _replace(value, place, (items * (MANY // len(items) + 1))[:MANY]), f"repeat {place} to {MANY} items"
    strings = [p for p in _places(value) if isinstance(_get(value, p), str)]
    named = [p for p in strings if p and p[-1] in ("arguments", "input", "partial_json")]
    if not (named or strings):
        return value, "no string"
    place = rng.choice(named or strings)
    return _replace(value, place, QUADRATIC), f"quadratic string at {place}"


def costly_mutant(seed: Seed, kind: str) -> tuple[bytes, str]:
    data, rng = seed.data(), random.Random(f"{SEED}-costly-{seed.name}-{kind}")
    if seed.name.endswith(".jsonl"):
        lines = data.decode().split("\n")
        numbered = [i for i, line in enumerate(lines) if line.strip()]
        if kind == "many":  # one JSONL line's largest list, and the lines repeated (a long session)
            i = max(numbered, key=lambda j: len(lines[j]))
            value, what = mutate_costly(json.loads(lines[i]), kind, rng)
            lines[i] = dump(value)
            return "\n".join(lines).encode(), f"line {i + 1}: {what}"
        i = rng.choice(numbered)
        value, what = mutate_costly(json.loads(lines[i]), kind, rng)
        lines[i] = dump(value)
        return "\n".join(lines).encode(), f"line {i + 1}: {what}"
    value, what = mutate_costly(json.loads(data), kind, rng)
    return dump(value).encode(), what


_COSTLY = [
    (seed, kind)
    for seed in SEEDS
    if not seed.name.endswith((".eval", ".md", ".db", ".vscdb"))
    for kind in ("quadratic", "many")
]


@pytest.mark.parametrize("seed, kind", _COSTLY, ids=[f"{seed.name}-{kind}" for seed, kind in _COSTLY])
def test_costly_mutant(seed, kind, tmp_path, capsys, fuzz_model):
    data, mutation = costly_mutant(seed, kind)
    what = f"{seed.name} ({seed.format}: {mutation})"
    path = tmp_path / seed.name
    path.write_bytes(data)
    output = tmp_path / "profile.json"
    check_run(
        ["profile", str(path), "--model", str(fuzz_model), "--no-progress", "-f", "json", "-o", str(output)],
        capsys,
        output,
        what,
    )


# -- on a GitHub runner (#33): no mutant's text starts a workflow command on standard output --------
#: Two mutants of every seed (each profiled and its tools listed), or TOKPROF_FUZZ_MUTANTS when it is set.
_ON_A_RUNNER = [
    (f"{seed.name}-{n}", seed, n) for seed in SEEDS for n in range(int(os.environ.get("TOKPROF_FUZZ_MUTANTS") or 2))
]


@pytest.mark.parametrize("name, seed, n", _ON_A_RUNNER, ids=[name for name, _, _ in _ON_A_RUNNER])
def test_mutant_on_a_runner(name, seed, n, tmp_path, capsys, monkeypatch, fuzz_model):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    data, mutation = _make(seed, n)
    if rng_name := random.Random(f"{SEED}-runner-{name}").choice(["::error file=app.py::pwned", "::add-mask::x"]):
        data = data.replace(b'"name": "', b'"name": "' + rng_name.encode(), 1)
    path = tmp_path / seed.name
    path.write_bytes(data)
    for command in ("profile", "tools"):
        what = f"{name} ({seed.format}: {mutation}; {command} on a runner)"
        check_run([command, str(path), "--model", str(fuzz_model), "--no-progress"], capsys, None, what)


# -- #45's mutators: parent cycles, long sessions, empty and growing side files, baseline paths --------
#: The seeds whose records link to a parent, and their id and parent keys.
LINKED = {"pi": ("id", "parentId"), "claude-code": ("uuid", "parentUuid"), "qwen-code": ("uuid", "parentUuid")}
_LINKED_SEEDS = [seed for seed in SEEDS if seed.format in LINKED and "old" not in seed.name]


def parent_mutants(seed: Seed) -> list[tuple[bytes, str]]:
    """A record that is its own parent, one that repeats an earlier record's id, and two records whose
    parents name each other (a cycle through a parent named before it appears)."""
    key, parent = LINKED[seed.format]
    rows = [json.loads(line) for line in seed.data().decode().splitlines() if line.strip()]
    linked = [i for i, row in enumerate(rows) if isinstance(row, dict) and isinstance(row.get(key), str)]
    first, middle, last = linked[0], linked[len(linked) // 2], linked[-1]
    out = []
    for what, change in (
        ("its own parent", lambda r: r[middle].update({parent: r[middle][key]})),
        ("a repeated id", lambda r: r[last].update({key: r[first][key]})),
        ("a cycle", lambda r: r[first].update({parent: r[last][key]})),
    ):
        changed = json.loads(json.dumps(rows))
        change(changed)
        out.append((_jsonl(changed), f"line {middle + 1 if 'own' in what else first + 1}: {what}"))
    return out


@pytest.mark.parametrize("seed", _LINKED_SEEDS, ids=[seed.name for seed in _LINKED_SEEDS])
def test_parent_cycle_mutants(seed, tmp_path, capsys, fuzz_model):
    for data, mutation in parent_mutants(seed):
        path = tmp_path / seed.name
        path.write_bytes(data)
        output = tmp_path / "profile.json"
        output.unlink(missing_ok=True)
        what = f"{seed.name} ({seed.format}: {mutation})"
        check_run(
            ["profile", str(path), "--model", str(fuzz_model), "-f", "json", "-o", str(output)], capsys, output, what
        )


def _long_session_writers():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    from long_sessions import WRITERS

    return WRITERS


@pytest.mark.parametrize("name", sorted(_long_session_writers()))
def test_long_session_mutants(name, tmp_path, capsys, fuzz_model):
    """Every agent reader on a long session of its shape (cut at a byte too: a session being written)."""
    path = _long_session_writers()[name](tmp_path / "long", 60)
    for cut in (None, len(path.read_bytes()) * 2 // 3):
        if cut is not None:
            path.write_bytes(path.read_bytes()[:cut])
        output = tmp_path / "profile.json"
        output.unlink(missing_ok=True)
        what = f"{name}: a long session" + (f", cut at byte {cut}" if cut else "")
        code = check_run(
            ["profile", str(path), "--model", str(fuzz_model), "-f", "json", "-o", str(output)], capsys, output, what
        )
        if cut is None:
            assert code == 0 and len(json.loads(output.read_text())["calls"]) == 60, what


def test_empty_and_growing_side_files(tmp_path, capsys, fuzz_model):
    """A side file an agent has just created (0 bytes) or is writing (cut mid-line): a Claude Code
    subagent's transcript is a note, never a failure (#45.2); a Cline task's ui_messages.json and an
    OpenCode part file end cleanly."""
    seed = next(seed for seed in SEEDS if seed.format == "claude-code")
    session = tmp_path / "cc" / "5f1e0000-0000-4000-8000-000000000001.jsonl"
    session.parent.mkdir()
    session.write_bytes(seed.data())
    side = session.with_suffix("") / "subagents" / "agent-a1.jsonl"
    side.parent.mkdir(parents=True)
    first_line = seed.data().split(b"\n")[0]
    cline = next(seed for seed in SEEDS if seed.format == "cline")
    task = tmp_path / "task" / "api_conversation_history.json"
    task.parent.mkdir()
    task.write_bytes(cline.data())
    ui = json.dumps(cline_log.cline_task()[1]).encode()
    for content in (b"", first_line[: len(first_line) // 2]):
        side.write_bytes(content)
        what = f"claude-code: a side transcript of {len(content)} bytes"
        assert check_run(["profile", str(session), "--model", str(fuzz_model)], capsys, None, what) == 0, what
        (task.parent / "ui_messages.json").write_bytes(content or ui[: len(ui) // 2])
        check_run(
            ["profile", str(task), "--model", str(fuzz_model)], capsys, None, f"cline: ui_messages.json {content!r}"
        )


def test_baseline_paths_never_overwrite_an_input(tmp_path, capsys, fuzz_model):
    """``check --update-baseline`` with the baseline named as the log, a link to it or the config:
    refused in one line, every input as it was (#45.1)."""
    config = tmp_path / "tokprof.toml"
    config.write_text("[budgets]\nbilled_input = 100000000\n")
    for seed in SEEDS:
        if seed.format not in LINKED and seed.format not in ("cline", "opencode", "gemini-cli", "codex"):
            continue
        log = tmp_path / seed.name / seed.name
        log.parent.mkdir(exist_ok=True)
        log.write_bytes(seed.data())
        link = log.with_name("link.json")
        if not link.exists():
            link.symlink_to(log)
        before = {p: p.read_bytes() for p in (log, config)}
        for baseline in (log, link, config):
            args = ["check", str(log), "--model", str(fuzz_model), "--config", str(config), "--update-baseline"]
            code = check_run(
                [*args, "--baseline", str(baseline)], capsys, None, f"{seed.name}: baseline {baseline.name}"
            )
            assert code == 2, f"{seed.name}: a baseline at {baseline.name} was written"
            assert {p: p.read_bytes() for p in (log, config)} == before, f"{seed.name}: {baseline.name} overwritten"
