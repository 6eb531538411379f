"""Hostile logs (#14): JSON nested thousands deep inside strings, absurd numbers, logs read as streams,
zip members under a size cap, and provider error text and URLs that are never shown."""

from __future__ import annotations

import json
import re
import struct
import zipfile
import zlib
from pathlib import Path

import pytest

import test_format_anthropic as anthropic_log
import test_format_claude_code as claude_log
import test_format_claude_print as stream_log
import test_format_codex as codex_log
import test_format_inspect as inspect_log
from tokprof.frontends.cli import main
from tokprof.base.errors import InputError
from tokprof.formats import anthropic, capture, read_trace
from tokprof.formats.jsonfile import NESTING_LIMIT, Document, JSONError, Lines, load, parse

DEEP = "[" * 5000 + "]" * 5000  # Python's parser raises RecursionError on this
HUGE = int("9" * 4300)  # as long as Python converts; the sum of two is too long to print


def deep_object(depth: int = 5000) -> str:
    return '{"word": ' + "[" * depth + "]" * depth + "}"


def one_line_error(args: list[str], capsys) -> str:
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == "" and err.count("\n") == 1 and err.startswith("tokprof: error: ") and "Traceback" not in err
    return err


def profile_error(path: Path, capsys, model_dir: Path, *extra: str) -> str:
    return one_line_error(["profile", str(path), "--model", str(model_dir), *extra], capsys)


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text(
        "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows), encoding="utf-8"
    )
    return path


def chat_record(arguments) -> dict:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": arguments}}
    return {
        "model": "m",
        "messages": [
            {"role": "user", "content": "define cat"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "an animal"},
        ],
    }


def stream_with(*events: dict) -> str:
    start = anthropic_log.message_start({"input_tokens": 3, "output_tokens": 1})
    return anthropic_log.sse(start, *events, {"type": "message_stop"})


# -- JSON nested thousands deep inside JSON strings ---------------------------------------------
def _deep_logs() -> dict[str, tuple[list, str]]:
    body = anthropic_log.second_body()
    tool_start = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}},
    }
    return {
        "request body as text": (
            [anthropic_log.traced(deep_object())],
            "line 1: request.body: invalid JSON: nested too deeply",
        ),
        "response body as text": (
            [anthropic_log.traced(body, raw=deep_object())],
            "line 1: response: invalid JSON: nested too deeply",
        ),
        "server-sent event data": (
            [
                anthropic_log.traced(
                    body,
                    raw=stream_with(json.loads('{"type": "ping"}')).replace(
                        'data: {"type": "ping"}', "data: " + deep_object()
                    ),
                )
            ],
            "line 1: response (stream) event 1: invalid JSON: nested too deeply",
        ),
        "partial_json": (
            [
                anthropic_log.traced(
                    body,
                    raw=stream_with(
                        tool_start,
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "input_json_delta", "partial_json": deep_object()},
                        },
                    ),
                )
            ],
            "line 1: response (stream) content[0].input: invalid JSON: nested too deeply",
        ),
        "tool-call arguments": (
            [chat_record(deep_object())],
            "line 1: messages[1].tool_calls[0].function.arguments: invalid JSON: nested too deeply",
        ),
        "a line of its own": ([chat_record("{}")] * 60 + [DEEP], "line 61: invalid JSON: nested too deeply"),
    }


@pytest.mark.parametrize("name", list(_deep_logs()))
def test_json_nested_deep_inside_strings_is_one_line(name, tmp_path, capsys, model_dir):
    rows, expected = _deep_logs()[name]
    path = write_jsonl(tmp_path / "log.jsonl", rows)
    # a request body that is not usable JSON hides what the record is: the format is named
    extra = ("-i", "anthropic") if name == "request body as text" else ()
    err = profile_error(path, capsys, model_dir, *extra)
    assert f"{path}: {expected}" in err


def test_codex_arguments_nested_deep(tmp_path, capsys, model_dir):
    count = codex_log.Counter()
    call = codex_log.item({"type": "function_call", "name": "shell", "call_id": "c1", "arguments": deep_object()})
    rows = [
        codex_log.meta(),
        codex_log.context(),
        codex_log.user("hi"),
        count(10),
        call,
        codex_log.result("c1"),
        count(20),
    ]
    err = profile_error(codex_log.write(tmp_path, rows), capsys, model_dir)
    assert re.search(
        r"line \d+: (response\.)?messages\[\d+\]\.tool_calls\[0\]\.function\.arguments: invalid JSON: "
        r"nested too deeply",
        err,
    ), err


def test_a_zip_member_nested_deep(tmp_path, capsys, model_dir):
    path = tmp_path / "deep.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps({"eval": {}, "status": "success"}))
        archive.writestr("samples/1_epoch_1.json", DEEP)
    assert f"{path}: samples/1_epoch_1.json: invalid JSON: nested too deeply" in profile_error(path, capsys, model_dir)


def test_nesting_just_under_the_limit_is_read_and_rendered(tmp_path, capsys, model_dir):
    inner = "[" * (NESTING_LIMIT - 1) + "]" * (NESTING_LIMIT - 1)  # in a JSON string: the arguments' own nesting
    path = write_jsonl(tmp_path / "log.jsonl", [chat_record('{"word": ' + inner[1:-1] + "}")])
    assert main(["profile", str(path), "--model", str(model_dir), "-f", "json"]) == 0, capsys.readouterr().err
    with pytest.raises(JSONError, match="nested too deeply"):
        parse("[" * (NESTING_LIMIT + 1) + "]" * (NESTING_LIMIT + 1))
    assert parse('["[[[[' + "[" * 500 + '"]') == ["[[[[" + "[" * 500]  # brackets in strings do not count


# -- numbers no provider reports -----------------------------------------------------------------
def test_a_count_of_thousands_of_digits_names_its_field(tmp_path, capsys, model_dir):
    record = {**chat_record("{}"), "usage": {"prompt_tokens": HUGE, "completion_tokens": HUGE}}
    err = profile_error(write_jsonl(tmp_path / "log.jsonl", [record, record]), capsys, model_dir)
    assert (
        "line 1: usage.prompt_tokens: expected a token count up to 1,000,000,000,000, found a 4,300-digit number" in err
    )

    rows = claude_log.split_response()
    rows[2]["message"]["usage"]["input_tokens"] = 10**12 + 1
    err = profile_error(claude_log.write_jsonl(tmp_path / "s.jsonl", rows), capsys, model_dir)
    assert (
        "line 3: message.usage.input_tokens: expected a token count up to 1,000,000,000,000, found 1000000000001" in err
    )


def test_a_cost_no_run_had(tmp_path, capsys, model_dir):
    rows = stream_log.run_lines()
    rows[-1]["total_cost_usd"] = HUGE
    err = profile_error(stream_log.write_jsonl(tmp_path / "run.jsonl", rows), capsys, model_dir)
    assert "line 7: total_cost_usd: expected a cost from 0 to 1,000,000,000 USD, found a 4,300-digit number" in err


# -- JSONL read as a stream ----------------------------------------------------------------------
def test_jsonl_lines_are_parsed_as_they_are_read(tmp_path):
    path = write_jsonl(tmp_path / "log.jsonl", [{"n": n} for n in range(1, 150)] + ["{not json"] + [{"n": 151}])
    doc = load(str(path))  # the first lines only: a bad line further on is met when it is read
    assert doc.lines is not None and doc.lines.head(3) == [(1, {"n": 1}), (2, {"n": 2}), (3, {"n": 3})]
    with pytest.raises(InputError, match=r"log.jsonl: line 150, column 2: invalid JSON"):
        list(doc.lines)
    doc = load(str(write_jsonl(tmp_path / "ok.jsonl", [{"n": n} for n in range(1, 100)] + ['{"n": 1'])))
    assert [n for n, _ in doc.lines] == list(range(1, 100))
    assert doc.truncated_line == 100  # known once the lines are read
    with pytest.raises(RuntimeError, match="read once"):
        list(doc.lines)


def test_what_is_jsonl_whatever_the_name(tmp_path):
    lines = load(str(write_jsonl(tmp_path / "log.txt", [{"a": 1}, {"b": 2}])))
    assert lines.lines is not None and list(lines.lines) == [(1, {"a": 1}), (2, {"b": 2})]
    one = tmp_path / "one.json"
    one.write_text('\n{"a": 1}\n\n  \n')
    assert load(str(one)).value == {"a": 1} and load(str(one)).lines is None
    pretty = write_json_text(tmp_path / "pretty.json", json.dumps({"a": [1, 2]}, indent=2))
    assert load(str(pretty)).value == {"a": [1, 2]}
    assert list(Document(lines=[(1, "x")]).lines or ()) == [(1, "x")] and isinstance(Document(lines=[]).lines, Lines)


def write_json_text(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_truncated_last_line_far_down_a_session(tmp_path):
    rows = claude_log.split_response() * 1
    rows += [claude_log.user(f"x{n}", "a5" if n == 0 else f"x{n - 1}", "more") for n in range(80)]
    path = claude_log.write_jsonl(tmp_path / "s.jsonl", rows)
    path.write_text(path.read_text() + '{"type": "assistant", "uuid": "cut', encoding="utf-8")
    trace = read_trace(str(path))
    assert {n.code: n.places for n in trace.notes}["truncated-line"] == [f"line {len(rows) + 1}"]


# -- zip members -------------------------------------------------------------------------------
def eval_log(tmp_path: Path, compression: int = zipfile.ZIP_DEFLATED) -> Path:
    return inspect_log.write_eval(tmp_path / "log.eval", inspect_log.inspect_log(), compression)


def test_a_zip_member_over_the_size_cap(tmp_path, capsys, model_dir, monkeypatch):
    path = eval_log(tmp_path)
    assert main(["profile", str(path), "--model", str(model_dir), "-f", "json"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("TOKPROF_MAX_MEMBER_BYTES", "300")
    err = profile_error(path, capsys, model_dir)
    assert re.search(
        r"log.eval: samples/1_epoch_1.json: [0-9,]+ bytes uncompressed, more than the limit of 300 bytes "
        r"for one member \(set TOKPROF_MAX_MEMBER_BYTES to raise it\)",
        err,
    ), err
    monkeypatch.setenv("TOKPROF_MAX_MEMBER_BYTES", "lots")
    assert "TOKPROF_MAX_MEMBER_BYTES: expected a number of bytes, found 'lots'" in profile_error(
        path, capsys, model_dir
    )


def _declare_size(path: Path, member: str, size: int) -> None:
    """Make a zip's central directory declare another uncompressed size for a member."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    for match in re.finditer(re.escape(b"PK\x01\x02"), bytes(data)):
        start = match.start()
        length = struct.unpack("<H", data[start + 28 : start + 30])[0]
        if data[start + 46 : start + 46 + length] == name:
            data[start + 24 : start + 28] = struct.pack("<I", size)
    path.write_bytes(bytes(data))


def test_a_zip_member_whose_declared_size_lies(tmp_path, capsys, model_dir, monkeypatch):
    bomb = tmp_path / "bomb.eval"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({"eval": {}, "status": "success"}))
        archive.writestr("samples/1_epoch_1.json", '{"events": [' + " " * 5_000_000 + "]}")
    assert bomb.stat().st_size < 20_000
    monkeypatch.setenv("TOKPROF_MAX_MEMBER_BYTES", "1000000")
    assert "more than the limit of 1,000,000 bytes" in profile_error(bomb, capsys, model_dir)  # its declared size
    _declare_size(bomb, "samples/1_epoch_1.json", 100)  # a lie: read no further than it, then the CRC fails
    assert "samples/1_epoch_1.json: cannot read the zip member: Bad CRC-32" in profile_error(bomb, capsys, model_dir)


def _zstandard_zip(path: Path, members: dict[str, bytes]) -> Path:
    """A zip of Zstandard-compressed members, as newer Inspect versions write (zip method 93)."""
    import zstandard

    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, zstandard.ZstdCompressor().compress(data))
    raw = bytearray(path.read_bytes())
    for signature, method, crc, name_length, name_at in (
        (b"PK\x03\x04", 8, 14, 26, 30),
        (b"PK\x01\x02", 10, 16, 28, 46),
    ):
        for match in re.finditer(re.escape(signature), bytes(raw)):
            start = match.start()
            length = struct.unpack("<H", raw[start + name_length : start + name_length + 2])[0]
            name = bytes(raw[start + name_at : start + name_at + length]).decode()
            raw[start + method : start + method + 2] = (93).to_bytes(2, "little")
            raw[start + crc : start + crc + 4] = struct.pack("<I", zlib.crc32(members[name]))
            if signature == b"PK\x01\x02":
                raw[start + 24 : start + 28] = struct.pack("<I", len(members[name]))
    path.write_bytes(bytes(raw))
    return path


def test_a_zstandard_member_is_capped_while_it_decompresses(tmp_path, capsys, model_dir, monkeypatch):
    pytest.importorskip("zstandard")
    if hasattr(zipfile, "ZIP_ZSTANDARD"):
        pytest.skip("this Python's zipfile reads Zstandard members itself")
    member = b'{"events": [' + b" " * 2_000_000 + b"]}"
    path = _zstandard_zip(
        tmp_path / "z.eval", {"header.json": b'{"eval": {}, "status": "success"}', "samples/1_epoch_1.json": member}
    )
    assert "the samples hold no model event" in profile_error(path, capsys, model_dir)  # read whole
    _declare_size(path, "samples/1_epoch_1.json", 1000)  # it says 1,000 bytes: it is 2 MB
    assert "corrupt zip member (more data than its declared size, 1,000 bytes)" in profile_error(
        path, capsys, model_dir
    )
    _declare_size(path, "samples/1_epoch_1.json", 1_000_000)  # within the cap, as declared: over it, as read
    monkeypatch.setenv("TOKPROF_MAX_MEMBER_BYTES", "1000000")
    assert "more than 1,000,000 bytes uncompressed, more than the limit" in profile_error(path, capsys, model_dir)


# -- provider text and URLs are never shown --------------------------------------------------------
LEAK = "sk-ant-api03-LEAKED-KEY"


def test_error_messages_and_url_paths_are_never_printed(tmp_path, capsys, model_dir):
    denied = {
        "type": "error",
        "error": {"type": "authentication_error", "message": f"invalid x-api-key: {LEAK}", "code": f"bad key {LEAK}"},
    }
    body = anthropic_log.second_body()
    rows = [
        anthropic_log.traced(body, denied, status=401),
        anthropic_log.traced(body, raw=json.dumps(denied), status=401),
        anthropic_log.traced(
            body,
            raw=anthropic_log.sse(
                anthropic_log.message_start({"input_tokens": 1}),
                {"type": "error", "error": {"type": "overloaded_error", "message": f"echo {LEAK}"}},
            ),
        ),
        anthropic_log.traced(body, url=f"https://proxy.example/tenants/{LEAK}/v1/chat/invoke?key={LEAK}"),
        anthropic_log.traced(body, url=f"https://proxy.example/{LEAK}/other"),
        anthropic_log.traced(body, anthropic_log.SECOND_RESPONSE),
    ]
    path = anthropic_log.write_jsonl(tmp_path / "log.jsonl", rows)
    out = tmp_path / "out"
    for fmt in ("table", "json", "html", "csv"):
        assert main(["profile", str(path), "--model", str(model_dir), "-f", fmt, "-o", str(out)]) == 0
        printed = out.read_text() + "".join(capsys.readouterr())
        assert LEAK not in printed and "LEAKED" not in printed, fmt
    assert main(["profile", str(path), "--model", str(model_dir), "-f", "json"]) == 0
    warnings = {w["code"]: w["places"] for w in json.loads(capsys.readouterr().out)["warnings"]}
    assert warnings["error-response"] == [
        "line 1 (HTTP 401 authentication_error)",
        "line 2 (HTTP 401 authentication_error)",
        "line 3 (overloaded_error in the stream)",
    ]
    assert warnings["other-endpoint"] == ["line 4 (invoke)", "line 5 (another endpoint)"]


@pytest.mark.parametrize(
    "error, shown",
    [
        (
            {"type": "invalid_request_error", "code": "context_length_exceeded", "message": "secret"},
            "invalid_request_error, context_length_exceeded",
        ),
        ({"message": "secret"}, "error"),
        ({"code": 429, "message": "secret"}, "429"),
        ({"type": "x" * 100, "code": "has spaces"}, "error"),
        ("a string", "error"),
    ],
)
def test_error_text_keeps_type_and_code(error, shown):
    assert capture.error_text({"error": error}, None) == shown
    assert capture.error_text({"error": error}, 500) == f"HTTP 500 {shown}"


# -- one rule for a traced response's body ---------------------------------------------------------
def test_a_null_body_with_a_text_body_raw_is_read_the_same_everywhere(tmp_path):
    failed = {
        "request": {"method": "POST", "body": anthropic_log.second_body()},
        "response": {"status_code": 529, "body": None, "body_raw": json.dumps(anthropic_log.ERROR_BODY)},
    }
    ok = {
        "request": {"method": "POST", "body": anthropic_log.second_body()},
        "response": {"status_code": 200, "body": None, "body_raw": json.dumps(anthropic_log.SECOND_RESPONSE)},
    }
    assert capture.exchange("x", "line 1", ok).response == anthropic_log.SECOND_RESPONSE
    assert capture.response_body(ok) == anthropic_log.SECOND_RESPONSE  # parsed, as the docstring says
    assert capture.response_body(failed) == anthropic_log.ERROR_BODY
    assert anthropic._http_error(failed) == "HTTP 529 overloaded_error"  # was "HTTP 529": body None
    path = anthropic_log.write_jsonl(tmp_path / "log.jsonl", [failed, ok])
    trace = read_trace(str(path))  # no URL: detected by the response body_raw holds (type "message")
    assert trace.format == "anthropic/jsonl"
    assert {n.code: n.places for n in trace.notes}["error-response"] == ["line 1 (HTTP 529 overloaded_error)"]
    assert trace.calls[0].reported is not None and trace.calls[0].reported.prompt == 125


# -- names from the log that are only shown ---------------------------------------------------------
def test_names_from_the_log_are_shown_escaped(tmp_path, capsys, model_dir):
    """Found by the fuzzer: a line type with a lone surrogate made the JSON output unwritable."""
    count = codex_log.Counter()
    rows = [
        codex_log.meta(),
        codex_log.context(model="gpt\x1b[2J"),
        codex_log.user("hi"),
        count(10),
        codex_log.say("hello"),
        codex_log.line("strange\ud800\n::error::x", {}),
    ]
    path = codex_log.write(tmp_path, rows)
    out = tmp_path / "profile.json"
    assert main(["profile", str(path), "--model", str(model_dir), "-f", "json", "-o", str(out)]) == 0, (
        capsys.readouterr()
    )
    profile = json.loads(out.read_text(encoding="utf-8"))
    places = {w["code"]: w["places"] for w in profile["warnings"]}["unknown-type"]
    assert places == ["line 6 (strange\\ud800\\n::error::x)"]
    assert profile["source"]["model"] == "gpt\\x1b[2J"
