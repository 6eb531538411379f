"""A file tokprof does not read gets one short line: what it looks like where that can be told,
else the names of the formats; a file of a known format that is broken keeps its precise error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokprof.frontends.cli import main
from tokprof.formats import lookalike

NOT_READ = "not a log format tokprof reads"


def run(path: Path, capsys, *extra: str) -> str:
    code = main(["profile", str(path), *extra])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"tokprof: error: {path}: ")
    return err.rstrip()[len(f"tokprof: error: {path}: ") :]


TOOLS = [{"name": "lookup", "description": "Look up a word.", "input_schema": {"type": "object"}}]
CASES = {
    "notes.md": ("some notes\n# not a heading at the start\n", "looks like Markdown text"),
    "tools.json": (
        json.dumps(TOOLS),
        "looks like a tools file (a list of tool definitions): use tokprof tools --tools {path}",
    ),
    "mcp.json": (
        json.dumps(
            {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "lookup", "inputSchema": {"type": "object"}}]}}
        ),
        "looks like a tools file (an MCP tools/list result): use tokprof tools --tools {path}",
    ),
    "result.json": (
        json.dumps({"type": "result", "subtype": "success", "total_cost_usd": 0.1, "num_turns": 3, "session_id": "s"}),
        "looks like Claude Code's --output-format json result (the run's totals, no calls): save "
        "--output-format stream-json --verbose to profile its calls",
    ),
    "notes.txt": ("Dear diary,\nthe agent ran.\n", "looks like plain text"),
    "log.jsonl": ("the agent said hello\nand then goodbye\n", "looks like plain text"),  # not JSON: not 'invalid JSON'
    "table.json": ("call,tokens\n1,200\n2,300\n", "looks like CSV"),
    "settings.json": ('[project]\nname = "x"\nversion = "1"\n', "looks like TOML"),
    "config.json": ("model: gpt-4o\nsteps:\n  - plan\n  - act\n", "looks like YAML"),
    "page.json": ("<!DOCTYPE html>\n<html><body>hi</body></html>\n", "looks like HTML"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_unknown_file_says_what_it_looks_like(name, tmp_path, capsys):
    content, expected = CASES[name]
    path = tmp_path / name
    path.write_text(content)
    assert run(path, capsys) == f"{NOT_READ}: {expected.format(path=path)}"


def test_a_binary_file(tmp_path, capsys):
    path = tmp_path / "blob.jsonl"
    path.write_bytes(b"\x00\x01\x02binary" * 20)
    assert run(path, capsys) == f"{NOT_READ}: looks like a binary file"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"x" * 50)
    assert run(path, capsys) == f"{NOT_READ}: looks like a gzip-compressed file: decompress it first (gunzip)"
    path.write_bytes(b"\xfd\xfe\xfd not text at all, " * 3)
    assert run(path, capsys) == f"{NOT_READ}: looks like a binary file (not UTF-8 text)"


@pytest.mark.parametrize("encoding, name", [("utf-16", "UTF-16"), ("utf-16-be", None), ("utf-32", "UTF-32")])
def test_a_log_saved_as_utf_16_says_to_convert_it(encoding, name, tmp_path, capsys):
    """What Windows PowerShell's ">" writes (UTF-16 with a byte order mark)."""
    path = tmp_path / "log.json"
    data = json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode(encoding)
    path.write_bytes(data if name else b"\xfe\xff" + data)
    name = name or "UTF-16"
    assert run(path, capsys) == (
        f"{NOT_READ}: looks like {name} text: convert it to UTF-8 first (iconv -f {name} -t UTF-8)"
    )


def test_unrecognised_json_names_the_formats_only(tmp_path, capsys):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"conversation": [1, 2, 3]}))
    message = run(path, capsys)
    assert message.startswith(f"{NOT_READ} (formats: otel, anthropic, openai-responses, openai-chat, inspect, ")
    assert message.endswith("agents; -i FORMAT forces one, and names them all when FORMAT is none of them)")
    assert len(message) < 220  # one short line, however many formats


@pytest.mark.parametrize(
    "content, expected",
    [
        ('{"messages": [{"role": "user", "content": "x"}', "truncated JSON"),
        ('[{"messages": [}]', "invalid JSON"),
        ("[" * 100000 + "]" * 100000, "invalid JSON: nested too deeply"),
    ],
)
def test_a_broken_json_file_keeps_its_precise_error(content, expected, tmp_path, capsys):
    path = tmp_path / "log.json"
    path.write_text(content)
    assert expected in run(path, capsys)


def test_a_broken_line_of_a_known_format_keeps_its_precise_error(tmp_path, capsys):
    path = tmp_path / "log.jsonl"
    good = json.dumps({"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]})
    path.write_text(good + "\nnot json at all\n" + good + "\n")
    assert run(path, capsys) == "line 2, column 1: invalid JSON: Expecting value"


def test_input_format_keeps_the_readers_error(tmp_path, capsys):
    path = tmp_path / "notes.txt"
    path.write_text("plain words\n")
    assert "invalid JSON" in run(path, capsys, "-i", "openai-chat")


@pytest.mark.parametrize(
    "data, expected",
    [
        (b'{"a": 1}', True),
        (b"\xef\xbb\xbf  [1, 2]", True),
        (b"[[1]]", True),
        (b'[ "x" ]', True),
        (b"[true, 1]", True),
        (b"[]", True),
        (b"[", True),
        (b"[project]\nname = 1", False),
        (b"[[tool.x]]", False),
        (b"name: x", False),
        (b"", False),
    ],
)
def test_starts_like_json(data, expected):
    assert lookalike.starts_like_json(data) is expected


def test_a_document_nested_too_deeply_says_where(tmp_path, capsys):
    value: object = "x"
    for _ in range(300):
        value = [value]
    path = tmp_path / "deep.json"
    path.write_text(json.dumps({"messages": value, "note": "[[[[ in a string ]]]]"}, indent=1), encoding="utf-8")
    said = run(path, capsys)
    assert said == "line 201, column 201: invalid JSON: nested too deeply (more than 200 levels)"
