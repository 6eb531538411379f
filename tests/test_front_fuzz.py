"""A fixed-seed fuzzer of the front ends' hostile inputs (#45), beside the readers' (``test_fuzz.py``):
the mutators that found round four's faults, each drawing its cases from one seeded generator.

* **baseline paths**: ``check --update-baseline`` with the baseline named (by ``--baseline`` or by
  the configuration) as the log, the configuration, the tools, system prompt or template file, a
  session's side transcript, through symbolic and hard links, relative detours, folders, dangling
  links, or a new file. Each run ends with exit 0 (and a baseline where it was named) or one line
  and exit 2; no input ever changes.
* **hostile upstreams** for ``tokprof record``'s proxy (stub servers on 127.0.0.1): bodies that
  inflate past the cap (gzip, zstd), lie about their encoding or length, streams past the cap, cut
  mid-event or holding invalid UTF-8, usage fields of every odd type, errors, secrets in headers,
  URLs and values of every vendor's shape. The agent gets upstream's bytes as they were sent; the
  recording is whole JSON lines holding no secret; every recorded call gets its live line.
* **hostile endpoints** for ``probe``'s client: answers past the cap, with and without a length,
  nested deep, of the wrong JSON types, not JSON, invalid UTF-8, redirects, cuts, hangs and drips.
  Every request ends in a text or one :class:`ChatError` line (never another exception, never the
  key), after at most its tries.

``TOKPROF_FUZZ_MUTANTS`` sets how many cases each gets (default below); caps are lowered through
their documented variables so that "huge" stays a few MB.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import random
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from conftest import CHATML, FIXTURES, write_json
from test_fuzz import fuzz_model  # noqa: F401 - the fixture
from test_probe_hostile import serving
from tokprof.frontends.cli import main

SEED = 45
CASES = int(os.environ.get("TOKPROF_FUZZ_MUTANTS") or 24)
MIB = 1024 * 1024
#: Credentials of every vendor's shape: none may reach a recording, a live line or an error.
SECRETS = (
    "sk-ant-api03-Zq8fuzzSECRETvalue001",
    "sk-proj-fuzzSECRETvalue0000000002",
    "key-3ax6xnjp29jd6fds4gc373sgvjxteol3",
    "ghp_fuzzSECRET16C7e42F292c6912E7710c84",
    "AIzaSyfuzzSECRET5f6G7h8I9j0KlMnOpQrStUv",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmdXp6In0.c2VjcmV0NQ",
    "hf_fuzzSECRETvalue0000000000000006",
)
#: Header names that carry credentials at one vendor or another.
SECRET_HEADERS = (
    "authorization",
    "x-api-key",
    "helicone-auth",
    "x-authentication",
    "cf-aig-authorization",
    "x-portkey-api-key",
    "api-key",
    "x-goog-api-key",
    "proxy-authorization",
    "x-amz-security-token",
    "cookie",
)
#: Header names that say nothing of a secret: only the value's shape gives it away.
PLAIN_HEADERS = ("x-gateway", "x-upstream-id", "x-trace", "x-custom")
ODD = (None, True, -1, 1.5, 1e308, "12", "many", [], {}, [1, 2], {"a": 1}, 10**30, "", "\x1b[2J")


def one_line_or_ok(code: int, err: str, what: str) -> None:
    assert code in (0, 2), f"{what}: exit {code}: {err[-1500:]}"
    assert "Traceback" not in err, what
    if code == 2:
        assert err.startswith("tokprof: error: ") and err.count("\n") == 1, f"{what}: {err[:1500]!r}"


# -- baseline paths ---------------------------------------------------------------------------------------
def _project(root: Path) -> dict[str, Path]:
    """A project: a log with a side folder, a configuration, tools, system prompt and template files."""
    root.mkdir()
    files = {
        "log": root / "session.json",
        "config": root / "tokprof.toml",
        "tools": root / "tools.json",
        "system": root / "system.txt",
        "template": root / "template.jinja",
        "side": root / "session" / "subagents" / "agent-a1.jsonl",
    }
    files["log"].write_bytes((FIXTURES / "good_transcript.json").read_bytes())
    files["config"].write_text("[budgets]\nlargest_prompt = 100000\n")
    write_json(files["tools"], json.loads((FIXTURES / "good_transcript.json").read_text())["tools"])
    files["system"].write_text("Be brief.")
    files["template"].write_text(CHATML)
    files["side"].parent.mkdir(parents=True)
    files["side"].write_text("")
    return files


def _baseline_target(files: dict[str, Path], name: str, rng: random.Random) -> tuple[str, str]:
    """(the path given for the baseline, how it was made) of the file ``name`` or beside it."""
    root = files["log"].parent
    kind = rng.choice(["itself", "symlink", "chain", "hardlink", "detour", "new", "folder", "dangling", "side"])
    target = files[name]
    if kind == "symlink":
        link = root / f"link-{rng.randrange(10**6)}.json"
        link.symlink_to(target)
        return str(link), f"a link to the {name}"
    if kind == "chain":
        first, second = root / f"a-{rng.randrange(10**6)}", root / f"b-{rng.randrange(10**6)}"
        second.symlink_to(target)
        first.symlink_to(second)
        return str(first), f"a chain of links to the {name}"
    if kind == "hardlink":
        link = root / f"hard-{rng.randrange(10**6)}.json"
        os.link(target, link)
        return str(link), f"a hard link to the {name}"
    if kind == "detour":
        (root / "sub").mkdir(exist_ok=True)
        return str(root / "sub" / ".." / "." / target.name), f"the {name} by a detour"
    if kind == "folder":
        return str(root / "session"), "the session's side folder"
    if kind == "side":
        return str(files["side"]), "a side transcript"
    if kind == "dangling":
        link = root / f"dangling-{rng.randrange(10**6)}.json"
        link.symlink_to(root / f"new-{rng.randrange(10**6)}.json")
        return str(link), "a dangling link to a new file"
    if kind == "new":
        return str(root / f"baseline-{rng.randrange(10**6)}.json"), "a new file"
    return str(target), f"the {name}"


@pytest.mark.parametrize("n", range(CASES))
def test_baseline_paths(n, tmp_path, capsys, monkeypatch, fuzz_model):  # noqa: F811 - the fixture
    rng = random.Random(SEED * 1000 + n)
    files = _project(tmp_path / "project")
    monkeypatch.chdir(files["log"].parent)
    template = rng.random() < 0.5
    name = rng.choice(["log", "config", "template", "tools"])  # tools.json is never this run's input
    given, how = _baseline_target(files, name, rng)
    inputs = ["log", "config", "side"] + (["template"] if template else [])
    fine = how in ("a new file", "a dangling link to a new file") or (
        name not in inputs and "side" not in how and "folder" not in how
    )
    by_config = rng.random() < 0.5
    if by_config:
        files["config"].write_text(f"baseline = {json.dumps(given)}\n[budgets]\nlargest_prompt = 100000\n")
    before = {key: files[key].read_bytes() for key in inputs}
    args = ["check", str(files["log"]), "--model", str(fuzz_model), "--update-baseline", "--no-progress"]
    args += ["--chat-template", str(files["template"])] if template else []
    args += ["--config", str(files["config"])] if rng.random() < 0.5 else []
    args += [] if by_config else ["--baseline", given]
    what = f"case {n}: baseline {how} ({'configured' if by_config else '--baseline'}, inputs {inputs}): {given}"
    code = main(args)
    out, err = capsys.readouterr()
    one_line_or_ok(code, err, what)
    assert {key: files[key].read_bytes() for key in inputs} == before, f"{what}: an input changed"
    if fine:
        assert code == 0, f"{what}: {err}"
        assert isinstance(json.loads(Path(os.path.realpath(given)).read_text()), dict), what
    else:
        assert code == 2 and "would overwrite the input" in err, f"{what}: {err}"


# -- hostile upstreams (tokprof record) -------------------------------------------------------------------
def _usage(rng: random.Random) -> dict:
    usage: dict = {"input_tokens": rng.choice([12, *ODD]), "output_tokens": rng.choice([3, *ODD])}
    for key in ("cache_read_input_tokens", "cache_creation_input_tokens"):
        if rng.random() < 0.5:
            usage[key] = rng.choice([5, *ODD])
    return usage


def _message(rng: random.Random) -> bytes:
    body = {"type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text"}]}
    body["content"][0]["text"] = rng.choice(["hi", "x" * 3000, "\x1b]0;title\x07", "::error::no"])
    body["usage"] = _usage(rng) if rng.random() < 0.8 else rng.choice(ODD)
    return json.dumps(body).encode()


def _events(rng: random.Random, size: int) -> bytes:
    start = {
        "type": "message_start",
        "message": {"id": "m", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "usage": _usage(rng)},
    }
    out = [b"event: message_start\ndata: " + json.dumps(start).encode() + b"\n\n"]
    delta = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"xxxx"}}\n\n'
    out += [delta] * max(1, size // len(delta))
    if rng.random() < 0.3:
        out.insert(1, b"data: \xff\xfe not utf-8\n\n")
    end = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": _usage(rng)}
    out.append(b"event: message_delta\ndata: " + json.dumps(end).encode() + b"\n\n")
    return b"".join(out)


UPSTREAM_KINDS = (
    "json",
    "gzip",
    "gzip-bomb",
    "zstd-bomb",
    "bad-gzip",
    "stream",
    "huge-stream",
    "cut-stream",
    "error",
    "usage",
)


def _upstream_case(n: int, rng: random.Random) -> dict:
    """What the stub upstream answers to case ``n`` (every kind in turn, its details drawn): status,
    headers, the body's pieces, whether it ends whole."""
    kind = UPSTREAM_KINDS[n % len(UPSTREAM_KINDS)]
    headers = [("content-type", "application/json")]
    pieces: list[bytes]
    whole = True
    status = 200
    if kind in ("json", "usage"):
        pieces = [_message(rng)]
    elif kind == "gzip":
        pieces = [gzip.compress(_message(rng))]
        headers.append(("content-encoding", "gzip"))
    elif kind == "gzip-bomb":
        pieces = [gzip.compress(b'{"a":"' + b"a" * (rng.randint(2, 6) * MIB) + b'"}', 6)]
        headers.append(("content-encoding", "gzip"))
    elif kind == "zstd-bomb":
        import zstandard

        pieces = [zstandard.ZstdCompressor().compress(b"z" * (rng.randint(2, 6) * MIB))]
        headers.append(("content-encoding", "zstd"))
    elif kind == "bad-gzip":
        pieces = [_message(rng)[: rng.randint(1, 40)]]
        headers.append(("content-encoding", rng.choice(["gzip", "deflate", "zstd", "br", "x-gzip, identity"])))
    elif kind == "error":
        status = rng.choice([400, 401, 429, 500, 529])
        pieces = [rng.choice([b'{"type":"error","error":{"type":"overloaded_error"}}', b"<html>busy</html>", b""])]
    else:
        data = _events(rng, 3 * MIB if kind == "huge-stream" else rng.randint(100, 20_000))
        headers = [("content-type", "text/event-stream")]
        step = rng.choice([7, 100, 4096, 65536] if len(data) < 100_000 else [16384, 65536])
        pieces = [data[i : i + step] for i in range(0, len(data), step)]
        if kind == "cut-stream":
            pieces = pieces[: max(1, len(pieces) // 2)]
            whole = False
    for _ in range(rng.randint(0, 3)):  # secrets in the answer's headers too
        headers.append((rng.choice(SECRET_HEADERS + PLAIN_HEADERS), rng.choice(SECRETS)))
    return {"kind": kind, "status": status, "headers": headers, "pieces": pieces, "whole": whole}


class _Cut(Exception):
    pass


def _stub(cases: list[dict]):
    from starlette.applications import Starlette
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    async def answer(request):
        await request.body()
        case = cases[int(request.path_params["n"])]
        if len(case["pieces"]) == 1 and case["whole"]:
            return Response(case["pieces"][0], status_code=case["status"], headers=dict(case["headers"]))

        async def body():
            for piece in case["pieces"]:
                yield piece
                await asyncio.sleep(0)
            if not case["whole"]:
                raise _Cut()

        return StreamingResponse(body(), status_code=case["status"], headers=dict(case["headers"]))

    return Starlette(routes=[Route("/case/{n:int}/{rest:path}", answer, methods=["POST"])])


def test_hostile_upstreams(tmp_path, monkeypatch):
    pytest.importorskip("httpx")
    pytest.importorskip("uvicorn")
    import logging

    import httpx

    import tokprof
    from tokprof.frontends.record.proxy import create_app
    from tokprof.frontends.record.run import LiveLines
    from tokprof.frontends.record.store import Recording
    from tokprof.frontends.serve import Running

    logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)  # the stub's own cuts are expected
    monkeypatch.setenv("TOKPROF_RECORD_MAX_BODY", "1")
    rng = random.Random(SEED)
    cases = [_upstream_case(n, rng) for n in range(CASES)]
    folder = tmp_path / "recordings"
    recording = Recording(str(folder), "fuzz")
    said: list[str] = []
    lines = LiveLines(recording.path, said.append)
    recorded = 0
    with Running(_stub(cases)) as stub, Running(create_app(recording, {"anthropic": stub.url}, lines)) as proxy:
        with httpx.Client(timeout=30) as client:
            for n, case in enumerate(cases):
                path = rng.choice(["v1/messages", "v1/messages/count_tokens", "v1/models", "v1/complete"])
                query = rng.choice(["", f"?sig={SECRETS[n % 7]}", f"?key={SECRETS[(n + 1) % 7]}", "?beta=true"])
                headers = {"anthropic-version": "2023-06-01"}
                for _ in range(rng.randint(1, 4)):
                    headers[rng.choice(SECRET_HEADERS + PLAIN_HEADERS)] = rng.choice(
                        [f"Bearer {rng.choice(SECRETS)}", rng.choice(SECRETS)]
                    )
                body = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
                url = f"{proxy.url}/anthropic/case/{n}/{path}{query}"
                what = f"case {n} ({case['kind']}, /{path})"
                try:
                    with client.stream("POST", url, json=body, headers=headers) as answer:
                        got = b"".join(answer.iter_raw())
                        assert answer.status_code == case["status"], what
                except httpx.HTTPError:
                    assert not case["whole"], f"{what}: a whole answer was cut off"
                else:
                    assert case["whole"] and got == b"".join(case["pieces"]), f"{what}: the agent got other bytes"
                recorded += path.startswith("v1/messages")
    lines.close()
    recording.close()
    assert not lines.thread.is_alive()
    text = Path(recording.path).read_text(encoding="utf-8")
    records = [json.loads(line) for line in text.splitlines()]  # whole lines only
    assert len(records) == recorded and len(said) == recorded, (len(records), recorded, said)
    for secret in SECRETS:
        assert secret not in text, f"a secret in the recording: {secret}"
        assert not any(secret in line for line in said), f"a secret in a live line: {secret}"
    assert all(line.startswith("tokprof record: ") and "\n" not in line for line in said)
    assert sorted(p.name for p in folder.iterdir()) == [Path(recording.path).name]  # no spool left
    try:
        tokprof.read_log(recording.path)
    except tokprof.InputError:
        pass


# -- hostile endpoints (tokprof probe) --------------------------------------------------------------------
STOP = threading.Event()
KEY = "sk-probe-fuzzSECRETkey000000000007"


class _Endpoint(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    cases: list[tuple[str, int, list[tuple[str, str]], list[bytes], float]] = []
    tries: dict[int, int] = {}

    def do_POST(self):  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("content-length") or 0))
        n = int(self.path.split("/")[2])
        _Endpoint.tries[n] = _Endpoint.tries.get(n, 0) + 1
        kind, status, headers, pieces, pause = _Endpoint.cases[n]
        try:
            if kind == "hang":
                STOP.wait(20)
                return
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            for piece in pieces:
                if pause and STOP.wait(pause):
                    return
                self.wfile.write(piece)
                self.wfile.flush()
            if kind == "cut":
                self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


ENDPOINT_KINDS = (
    "good",
    "types",
    "deep",
    "huge",
    "endless",
    "not-json",
    "utf8",
    "redirect",
    "status",
    "cut",
    "hang",
    "drip",
)


def _endpoint_case(n: int, rng: random.Random) -> tuple[str, int, list[tuple[str, str]], list[bytes], float]:
    """What the stub endpoint answers to case ``n`` (every kind in turn, its details drawn)."""
    kind = ENDPOINT_KINDS[n % len(ENDPOINT_KINDS)]
    answer = json.dumps({"choices": [{"message": {"content": "It is pay-shard-7."}}]}).encode()
    if kind == "types":
        answer = json.dumps(
            {"choices": rng.choice([[], None, [{"message": {"content": rng.choice(ODD)}}], "x"])}
        ).encode()
    elif kind == "deep":
        answer = b'{"choices":' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    elif kind == "huge":
        answer = b" " * (2 * MIB) + answer
    elif kind == "not-json":
        answer = b"<html>an error page</html>"
    elif kind == "utf8":
        answer = b'{"choices":[{"message":{"content":"\xff\xfe"}}]}'
    status = 200
    headers = [("content-type", "application/json")]
    if kind == "redirect":
        status = rng.choice([301, 302, 307, 308])
        headers.append(("location", "http://attacker.example/steal"))
        answer = b""
    elif kind == "status":
        status = rng.choice([400, 401, 404, 429, 500, 503])
    pieces = [answer]
    pause = 0.0
    if kind == "endless":  # chunked, no length, past the cap
        headers.append(("transfer-encoding", "chunked"))
        pieces = [b"100000\r\n" + b" " * MIB + b"\r\n"] * 3 + [b"0\r\n\r\n"]
    elif kind == "drip":
        pieces = [bytes([b]) for b in answer]
        pause = 0.05
        headers.append(("content-length", str(len(answer))))
    elif kind == "cut":
        headers.append(("content-length", str(len(answer) + 100)))
    else:
        headers.append(("content-length", str(len(answer))))
    return kind, status, headers, pieces, pause


@pytest.fixture(scope="module")
def endpoint():
    rng = random.Random(SEED + 1)
    _Endpoint.cases = [_endpoint_case(n, rng) for n in range(CASES)]
    with serving(_Endpoint, STOP) as url:
        yield url


def test_hostile_endpoints(endpoint, monkeypatch):
    from tokprof.base.chat_client import ChatClient, ChatError

    monkeypatch.setenv("TOKPROF_PROBE_MAX_ANSWER", "1")
    _Endpoint.tries.clear()
    for n, (kind, *_) in enumerate(_Endpoint.cases):
        client = ChatClient(f"{endpoint}/case/{n}", api_key=KEY, timeout=0.5, retries=2, backoff=0.02)
        what = f"case {n} ({kind})"
        try:
            text = client.complete([{"role": "user", "content": "which shard?"}])
        except ChatError as exc:
            message = str(exc)
            assert "\n" not in message and KEY not in message, f"{what}: {message!r}"
        else:
            assert isinstance(text, str) and kind in ("good", "types", "utf8", "drip"), f"{what}: {text!r}"
        assert 1 <= _Endpoint.tries.get(n, 0) <= 3, f"{what}: {_Endpoint.tries.get(n)} tries"
        if kind in ("hang", "drip", "huge", "endless", "redirect", "deep", "not-json"):
            assert _Endpoint.tries[n] == 1, f"{what}: retried"
