"""tokprof serve: the server in-process (Starlette's test client) and on an ephemeral port of
127.0.0.1 (uvicorn in a thread, or the command in a process). Counts equal the library's and the
command line's; extending requests equal fresh counts; errors get their status codes."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from starlette.testclient import TestClient

import tokprof
from conftest import ROOT, WEATHER_TOOL, small_transcript
from tokprof.frontends import serve
from tokprof.frontends.cli import main

sys.path.insert(0, str(ROOT / "benchmarks"))
from generate_session import records as log_records, session  # noqa: E402

LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def app():
    return serve.create_app(["qwen2.5"])


@pytest.fixture(scope="module")
def client(app):
    return TestClient(app, base_url=LOCAL)


def records(doc: dict) -> list[dict]:
    """One request body per call of a generated session, naming the model that counts."""
    return [dict(body, model="qwen2.5") for body in log_records(doc)]


def fresh(name: str, messages, tools=None, system=None) -> dict:
    """The buckets of a prompt counted from scratch, by a model of its own."""
    return tokprof.get_model(name).count(messages, tools, system=system).as_dict()


def post(client, body, route="/v1/count", **kwargs):
    response = client.post(route, json=body, **kwargs)
    assert response.status_code == 200, response.text
    return response.json()


def anthropic_conversation(turns: int) -> tuple[list[dict], list[dict]]:
    """An Anthropic Messages conversation: tool_use, tool_result, text, an image (not text: a note)."""
    tools = [
        {
            "name": "lookup",
            "description": "Look up a word.",
            "input_schema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
        }
    ]
    messages: list[dict] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Define some animals."},
                {"type": "image", "source": {"type": "base64", "data": "x"}},
            ],
        }
    ]
    for i in range(turns):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Looking up word {i}."},
                    {
                        "type": "tool_use",
                        "id": f"toolu_{i}",
                        "name": "lookup",
                        "input": {"word": f"animal {i}", "n": i},
                    },
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{i}",
                        "content": f"animal {i} is an animal " * (i + 1),
                    }
                ],
            }
        )
    return messages, tools


# -- counts ------------------------------------------------------------------------------------
def test_counts_equal_the_library(client):
    log = small_transcript()
    for messages, tools in [
        (log["messages"][:2], None),
        (log["messages"][:-1], log["tools"]),
        ([{"role": "user", "content": "hello"}], []),
    ]:
        body = {"model": "qwen2.5", "messages": messages}
        if tools is not None:
            body["tools"] = tools
        answer = post(client, body)
        assert answer["buckets"] == fresh("qwen2.5", messages, tools or None)
        assert answer["total"] == sum(answer["buckets"].values())
        assert answer["model"] == "qwen2.5" and answer["exact"] is True
        assert answer["context_window"] == 131072 and answer["fill"] == round(answer["total"] / 131072, 6)
        assert answer["thresholds"] == [0.7, 0.8] and answer["crossed"] == []


def test_counts_equal_the_command_line(client, tmp_path, capsys):
    doc = session(12, 300, 4, 3)
    calls = records(doc)
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in calls), encoding="utf-8")
    assert main(["profile", str(path), "--model", "qwen2.5", "-f", "json"]) == 0
    profiled = json.loads(capsys.readouterr().out)["calls"]
    answers = [post(client, body) for body in calls]
    assert [a["buckets"] for a in answers] == [c["buckets"] for c in profiled]
    assert [a["reused"] for a in answers] == [False] + [True] * (len(calls) - 1)


def test_the_model_a_request_names(client):
    messages = [{"role": "user", "content": "hello"}]
    assert post(client, {"messages": messages})["model"] == "qwen2.5"  # the default
    answer = post(client, {"model": "qwen-3", "messages": messages})  # an alias
    assert answer["model"] == "qwen3" and answer["requested_model"] == "qwen-3"
    assert answer["buckets"] == fresh("qwen3", messages)
    answer = post(client, {"model": "gpt-4.1-mini", "messages": messages})  # a closed model: its proxy
    assert answer["model"] == "openai-proxy" and answer["exact"] is False
    assert answer["buckets"] == fresh("openai-proxy", messages)
    # a model name as a deployment gives it: the registered model that would serve it, as a hint
    response = client.post("/v1/count", json={"model": "Qwen/Qwen2.5-7B-Instruct", "messages": messages})
    assert response.status_code == 404 and "name qwen2.5" in response.json()["error"]["message"]


def test_anthropic_count_tokens_equals_the_proxy(client):
    messages, tools = anthropic_conversation(2)
    body = {
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": "You are terse."}],
        "tools": tools,
        "messages": messages,
        "max_tokens": 1024,
    }
    answer = post(client, body, "/v1/messages/count_tokens")
    buckets = tokprof.get_model("claude-proxy").count(messages, tools, system=body["system"])
    assert answer["input_tokens"] == buckets.total == answer["total"]
    assert answer["buckets"] == buckets.as_dict() and buckets.tool_definitions > 0
    assert answer["model"] == "claude-proxy" and answer["exact"] is False and answer["method"]
    assert answer["requested_model"] == "claude-sonnet-4-5"
    assert [w["code"] for w in answer["warnings"]] == [w.code for w in buckets.warnings]
    assert "content-not-text" in [w["code"] for w in answer["warnings"]]
    assert answer["context_window"] == 200000


def test_extending_requests_equal_fresh_counts(client):
    doc = session(30, 400, 6, 11)
    for i, body in enumerate(records(doc)):
        answer = post(client, body)
        assert answer["reused"] == (i > 0)
        assert answer["buckets"] == fresh("qwen2.5", body["messages"], body["tools"]), f"call {i}"


def test_one_message_at_a_time(client):
    """A harness that counts after every message: a tool result whose call is in the earlier messages
    is converted with the call ids of the conversation so far."""
    doc = session(6, 300, 3, 12)
    messages = doc["messages"]
    for n in range(1, len(messages) + 1):
        answer = post(client, {"model": "qwen2.5", "tools": doc["tools"], "messages": messages[:n]})
        assert answer["reused"] == (n > 1)
        assert answer["buckets"] == fresh("qwen2.5", messages[:n], doc["tools"]), f"{n} messages"
    bad = messages[:3] + [{"role": "tool", "tool_call_id": "call_nope", "content": "x"}]
    response = client.post("/v1/count", json={"model": "qwen2.5", "tools": doc["tools"], "messages": bad})
    assert response.status_code == 400 and response.json()["error"]["field"] == "messages[3].tool_call_id"


def test_anthropic_extending_requests_equal_fresh_counts(client):
    messages, tools = anthropic_conversation(8)
    for n in range(1, len(messages) + 1):
        body = {"model": "claude-opus-4-1", "system": "Be brief.", "tools": tools, "messages": messages[:n]}
        answer = post(client, body, "/v1/messages/count_tokens")
        assert answer["reused"] == (n > 1)
        assert answer["buckets"] == fresh("claude-proxy", messages[:n], tools, "Be brief."), f"{n} messages"


def test_interleaved_conversations_each_keep_their_reuse(client):
    a, b = records(session(10, 200, 3, 21)), records(session(10, 200, 3, 22))
    for i, (x, y) in enumerate(zip(a, b)):
        for body in (x, y):
            answer = post(client, body)
            assert answer["reused"] == (i > 0)
            assert answer["buckets"] == fresh("qwen2.5", body["messages"], body["tools"])


def test_a_request_that_changes_the_conversation_is_counted_afresh(client):
    calls = records(session(8, 200, 3, 31))
    for body in calls:
        post(client, body)
    edited = json.loads(json.dumps(calls[-1]))
    edited["messages"][1]["content"] += " (edited)"
    answer = post(client, edited)
    assert answer["reused"] is False
    assert answer["buckets"] == fresh("qwen2.5", edited["messages"], edited["tools"])
    again = post(client, calls[-1])  # the first conversation is still there
    assert again["reused"] is True and again["buckets"] == fresh("qwen2.5", calls[-1]["messages"], calls[-1]["tools"])


def test_values_that_compare_equal_but_render_apart_are_not_matched(client):
    """1 == True and {"a", "b"} == {"b", "a"} in Python, but templates write them apart: requests are
    matched to conversations by their JSON text."""
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": {"word": "cat", "n": 1}}}
    first = [
        {"role": "user", "content": "define cat"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "cat is an animal"},
    ]
    post(client, {"messages": first, "tools": [WEATHER_TOOL]})
    second = json.loads(json.dumps(first))
    second[1]["tool_calls"][0]["function"]["arguments"] = {"n": True, "word": "cat"}
    second.append({"role": "user", "content": "and dog?"})
    answer = post(client, {"messages": second, "tools": [WEATHER_TOOL]})
    assert answer["reused"] is False
    assert answer["buckets"] == fresh("qwen2.5", second, [WEATHER_TOOL])


def test_thresholds_and_window():
    app = serve.create_app(["qwen2.5"], window=40, thresholds="50,75")
    client = TestClient(app, base_url=LOCAL)
    answer = post(client, {"messages": [{"role": "user", "content": "hello " * 10}]})
    assert answer["context_window"] == 40 and answer["thresholds"] == [0.5, 0.75]
    assert answer["fill"] == round(answer["total"] / 40, 6)
    assert answer["crossed"] == [t for t in (0.5, 0.75) if answer["total"] >= t * 40] and answer["crossed"]


def test_models_and_health(client, model_dir):
    models = client.get("/v1/models").json()
    names = [m["id"] for m in models["data"]]
    assert {"qwen2.5", "qwen3", "claude-proxy", "openai-proxy"} <= set(names) and models["default"] == "qwen2.5"
    health = client.get("/health").json()
    assert (
        health["status"] == "ok" and health["version"] == tokprof.__version__ and "qwen2.5" in health["loaded_models"]
    )

    local = TestClient(serve.create_app([str(model_dir)]), base_url=LOCAL)
    listed = {m["id"]: m for m in local.get("/v1/models").json()["data"]}
    assert listed[str(model_dir)]["source"] == "local" and listed[str(model_dir)]["loaded"]
    messages = small_transcript()["messages"][:2]
    answer = post(local, {"messages": messages})
    assert answer["model"] == str(model_dir)
    assert answer["buckets"] == tokprof.get_model(str(model_dir)).count(messages).as_dict()


def test_a_request_never_makes_the_server_read_a_path(client, model_dir):
    response = client.post("/v1/count", json={"model": str(model_dir), "messages": [{"role": "user", "content": "x"}]})
    assert response.status_code == 404


# -- errors ----------------------------------------------------------------------------------------
DEEP = {"role": "user", "content": "x", "extra": json.loads("[" * 300 + "]" * 300)}


@pytest.mark.parametrize(
    "content, field",
    [
        (b"{bad json", None),
        (b"[1, 2]", None),
        (b"\xff\xfe", None),
        (json.dumps({"model": "qwen2.5"}).encode(), "messages"),
        (json.dumps({"messages": "hello"}).encode(), "messages"),
        (json.dumps({"messages": [{"role": "usr", "content": "x"}]}).encode(), "messages[0].role"),
        (json.dumps({"messages": [{"role": "user", "content": 3}]}).encode(), "messages[0].content"),
        (json.dumps({"messages": [{"role": "user", "content": "x"}], "tools": "all"}).encode(), "tools"),
        (json.dumps({"messages": [{"role": "user", "content": "x"}], "tools": [{"bad": 1}]}).encode(), "tools[0].name"),
        (json.dumps({"model": 4, "messages": []}).encode(), "model"),
        (json.dumps({"messages": []}).encode(), "messages"),
        (json.dumps({"messages": [DEEP]}).encode(), "messages[0]"),
        (b'{"messages": [' + b"[" * 5000 + b"]" * 5000 + b"]}", "messages[0]"),
        (b'{"messages": [{"role": "user", "content": "x", "n": ' + b"9" * 5000 + b"}]}", None),
    ],
)
def test_bad_bodies_get_400_naming_the_field(client, content, field):
    response = client.post("/v1/count", content=content)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"]
    assert error.get("field") == field


def test_bad_anthropic_bodies_name_the_field(client):
    bad = {
        "model": "claude-sonnet-4-5",
        "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "x"}]}],
    }
    response = client.post("/v1/messages/count_tokens", json=bad)
    assert response.status_code == 400 and response.json()["error"]["field"] == "messages[0].content[0].tool_use_id"
    response = client.post(
        "/v1/messages/count_tokens", json={"messages": [{"role": "user", "content": "x"}], "system": 5}
    )
    assert response.status_code == 400 and response.json()["error"]["field"] == "system"


def test_an_unknown_model_gets_404_with_the_known_names(client):
    response = client.post("/v1/count", json={"model": "qwen4", "messages": [{"role": "user", "content": "x"}]})
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["type"] == "not_found_error" and error["field"] == "model" and "qwen3" in error["message"]
    assert {"qwen2.5", "qwen3", "claude-proxy", "openai-proxy"} <= set(error["known_models"])


def test_oversized_bodies_get_413():
    client = TestClient(serve.create_app(["qwen2.5"], max_body=1000), base_url=LOCAL)
    body = {"messages": [{"role": "user", "content": "x" * 2000}]}
    response = client.post("/v1/count", json=body)
    assert response.status_code == 413 and response.json()["error"]["type"] == "request_too_large"

    def chunks():  # no content-length: the limit is kept while reading
        for _ in range(10):
            yield b"x" * 500

    response = client.post("/v1/count", content=chunks())
    assert response.status_code == 413
    assert post(client, {"messages": [{"role": "user", "content": "hello"}]})["total"] > 0


def test_tokens():
    app = serve.create_app(["qwen2.5"], token="s3cret")
    client = TestClient(app, base_url="http://192.0.2.1")  # any host, with the token
    body = {"messages": [{"role": "user", "content": "hello"}]}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"x-api-key": "s3cre"}, {"Authorization": "s3cret"}):
        response = client.post("/v1/count", json=body, headers=headers)
        assert response.status_code == 401 and response.json()["error"]["type"] == "authentication_error"
        assert response.headers["www-authenticate"] == "Bearer"
    assert client.get("/health").status_code == 401
    assert client.post("/v1/count", json=body, headers={"Authorization": "Bearer s3cret"}).status_code == 200
    assert client.post("/v1/count", json=body, headers={"x-api-key": "s3cret"}).status_code == 200


def test_without_a_token_only_loopback_hosts_are_answered(app):
    for base in ("http://127.0.0.1:8765", "http://localhost", "http://[::1]:8765"):
        assert TestClient(app, base_url=base).get("/health").status_code == 200
    response = TestClient(app, base_url="http://attacker.example").get("/health")
    assert response.status_code == 403 and response.json()["error"]["type"] == "permission_error"


def test_listening_beyond_loopback_needs_a_token(capsys, monkeypatch):
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        serve.check_bind(host, None)
    serve.check_bind("0.0.0.0", "s3cret")
    with pytest.raises(tokprof.TokprofError, match="needs a token"):
        serve.check_bind("0.0.0.0", None)
    monkeypatch.delenv(serve.TOKEN_VARIABLE, raising=False)
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "needs a token" in err


def test_the_command_says_how_to_install_the_extra(capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a))
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "tokprof: error: tokprof serve needs uvicorn: pip install 'tokprof[serve]'"


def test_a_bug_is_a_500_without_a_traceback_or_the_request(monkeypatch, caplog):
    app = serve.create_app(["qwen2.5"])
    client = TestClient(app, base_url=LOCAL, raise_server_exceptions=False)

    def broken(route, raw):
        raise RuntimeError("secret-in-the-bug " + raw.decode())

    monkeypatch.setattr(serve.app, "routing_key", broken)  # a bug in the server's own process
    with caplog.at_level(logging.INFO, logger="tokprof.frontends.serve"):
        response = client.post("/v1/count", json={"messages": [{"role": "user", "content": "secret-content"}]})
    assert response.status_code == 500 and response.json()["error"]["type"] == "api_error"
    assert "secret" not in response.text and "Traceback" not in response.text
    assert "RuntimeError" in caplog.text and "secret" not in caplog.text and "Traceback" not in caplog.text


def test_a_bug_in_a_worker_is_a_500_without_the_request(caplog):
    """A worker's reply to a bug names its type and place only; the server answers 500 with them."""
    from tokprof.frontends.serve import pool, worker

    class Broken:
        cache = serve.ConversationCache()
        models = serve.Models(["qwen2.5"])

        def count(self, route, raw):
            raise KeyError("secret-in-the-bug " + raw.decode())

    reply = worker.answer(Broken(), "count", b'{"secret": 1}')
    assert reply[:2] == ("bug", "KeyError") and "secret" not in repr(reply)
    with caplog.at_level(logging.INFO, logger="tokprof.frontends.serve"), pytest.raises(serve.Rejected) as raised:
        pool._decode(reply)
    assert raised.value.status == 500 and "KeyError" in raised.value.message and "secret" not in caplog.text


def test_a_slow_count_gets_503_and_its_worker_is_restarted():
    app = serve.create_app(["qwen2.5"], timeout=0.05, workers=1)
    client = TestClient(app, base_url=LOCAL)
    assert post(client, {"messages": [{"role": "user", "content": "hello"}]})["total"] > 0  # the worker started
    heavy = {
        "messages": [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " * 20} for i in range(4000)
        ]
    }
    response = client.post("/v1/count", json=heavy)
    assert response.status_code == 503 and response.json()["error"]["type"] == "timeout_error"
    assert client.get("/health").json()["workers"]["timeouts"] == 1  # /health answered while it restarts
    for _ in range(600):  # the killed worker is started again (bounded: 60 s)
        workers = client.get("/health").json()["workers"]
        if workers["running"] == 1 and workers["busy"] == 0:
            break
        time.sleep(0.1)
    assert workers["restarts"] == 1
    assert post(client, {"messages": [{"role": "user", "content": "hello again"}]})["total"] > 0


def test_log_lines_hold_nothing_of_the_request(client, caplog):
    secret = "zebra-7731"
    with caplog.at_level(logging.INFO, logger="tokprof.frontends.serve"):
        post(client, {"messages": [{"role": "user", "content": f"my {secret}"}]})
        client.post("/v1/count", json={"messages": [{"role": secret, "content": "x"}]})
        client.post("/v1/count", json={"model": secret, "messages": []})
        client.post("/v1/count", content=f'{{"{secret}": '.encode())
        client.post(f"/v1/{secret}", json={})
    lines = [r.getMessage() for r in caplog.records if r.name == "tokprof.frontends.serve"]
    assert len(lines) == 5 and not any(secret in line for line in lines)
    assert lines[0].startswith("POST /v1/count 200 ") and "model=qwen2.5" in lines[0]
    assert "field=messages[0].role" in lines[1] and "not_found_error field=model" in lines[2]


# -- the cache -------------------------------------------------------------------------------------------
def test_the_cache_is_bounded_in_conversations_and_memory():
    app = serve.create_app(["qwen2.5"], cache_entries=2, workers=1)  # one worker: its cache has the bounds
    client = TestClient(app, base_url=LOCAL)
    conversations = [records(session(3, 100, 2, seed)) for seed in (41, 42, 43)]
    for calls in conversations:
        for body in calls[:2]:
            post(client, body)
    stats = client.get("/health").json()["cache"]
    assert stats["conversations"] == 2 and stats["evicted"] == 1
    evicted = post(client, conversations[0][2])  # the least recently used was dropped
    assert evicted["reused"] is False
    assert evicted["buckets"] == fresh("qwen2.5", conversations[0][2]["messages"], conversations[0][2]["tools"])
    assert post(client, conversations[2][2])["reused"] is True

    small = TestClient(serve.create_app(["qwen2.5"], cache_bytes=100_000, workers=1), base_url=LOCAL)
    calls = records(session(6, 2000, 2, 44))
    answers = [post(small, body) for body in calls]
    assert answers[0]["reused"] is False and answers[-1]["reused"] is False  # over the bound: not kept
    assert small.get("/health").json()["cache"]["estimated_bytes"] <= 100_000
    assert answers[-1]["buckets"] == fresh("qwen2.5", calls[-1]["messages"], calls[-1]["tools"])


# -- on a socket -------------------------------------------------------------------------------------------
def test_concurrent_requests_on_a_socket_give_the_same_answers_and_the_server_stops_cleanly():
    conversations = [records(session(10, 300, 4, seed)) for seed in (51, 52, 53, 54)]
    expected = [[fresh("qwen2.5", b["messages"], b["tools"]) for b in calls] for calls in conversations]
    running = serve.Running(serve.create_app(["qwen2.5"]))
    with running:

        def replay(calls):
            with httpx.Client(base_url=running.url, timeout=60) as http:
                out = []
                for body in calls:
                    response = http.post("/v1/count", json=body)
                    assert response.status_code == 200, response.text
                    out.append(response.json())
                return out

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(replay, conversations))
        # the same conversation from 4 clients at once: one of them starts it, all are counted exactly
        with ThreadPoolExecutor(4) as pool:
            same = list(pool.map(lambda _: replay(conversations[0][:4]), range(4)))
        port = running.sock.getsockname()[1]
    assert running.stop() and not running.thread.is_alive()
    for got, want in zip(answers, expected):
        assert [a["buckets"] for a in got] == want
        assert all(a["reused"] for a in got[1:])
    for got in same:
        assert [a["buckets"] for a in got] == expected[0][:4]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_answers_are_not_held_back_by_nagles_algorithm():
    """An answer's head and body are written apart: without TCP_NODELAY each request would wait for the
    client's delayed acknowledgement (40 ms). Accepted connections inherit it from the listening socket."""
    with serve.Running(serve.create_app(["qwen2.5"])) as running:
        assert running.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        with socket.create_connection(running.sock.getsockname()[:2]) as connection:
            connection.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert connection.recv(100).startswith(b"HTTP/1.1 200")


def test_the_command_serves_until_interrupted(tmp_path):
    env = dict(os.environ, TOKPROF_SERVE_TOKEN="")
    process = subprocess.Popen(
        [sys.executable, "-m", "tokprof", "serve", "--port", "0", "--model", "qwen2.5"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.startswith("tokprof serve: counting with qwen2.5 on http://127.0.0.1:"), line
        url = line.split(" on ")[1].split(" ")[0]
        messages = [{"role": "user", "content": "hello"}]
        answer = httpx.post(url + "/v1/count", json={"messages": messages}, timeout=60).json()
        assert answer["buckets"] == fresh("qwen2.5", messages)
        process.send_signal(signal.SIGINT)
        process.wait(30)
        rest = process.stderr.read()
        assert "POST /v1/count 200" in rest and "Traceback" not in rest
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_mistral_conversation_extended_with_a_later_result_keeps_the_clients_ids(client):
    """Ids mapped for Mistral (9 characters) are mapped on the count's copy: the conversation keeps
    the client's, so a later tool result answering an earlier call matches it, and the mapping's
    warning is there on every answer."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get",
                "description": "d",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            },
        }
    ]

    def call(i, q):
        return {"id": i, "type": "function", "function": {"name": "get", "arguments": json.dumps({"q": q})}}

    first = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("call_one_123456", "a"), call("call_two_123456", "b")],
        },
        {"role": "tool", "tool_call_id": "call_one_123456", "content": "result one"},
    ]
    second = first + [{"role": "tool", "tool_call_id": "call_two_123456", "content": "result two"}]
    for messages in (first, second):
        answer = post(client, {"model": "mistral", "messages": messages, "tools": tools})
        fresh = tokprof.get_model("mistral").count(messages, tools)
        assert answer["total"] == fresh.total and answer["buckets"] == fresh.as_dict()
        assert "tool-call-ids-mapped" in [w["code"] for w in answer["warnings"]]


def test_fields_the_count_does_not_read_are_named(client):
    """A misspelt or unsupported field is a warning naming it, never silence; the count is unchanged."""
    messages = [{"role": "user", "content": "hello"}]
    plain = post(client, {"model": "qwen2.5", "messages": messages})
    answer = post(client, {"model": "qwen2.5", "messages": messages, "window": 200, "tool_choice": "auto"})
    assert answer["total"] == plain["total"]
    ignored = [w for w in answer["warnings"] if w["code"] == "ignored-fields"]
    assert len(ignored) == 1 and "window, tool_choice" in ignored[0]["message"]
    assert not [w for w in plain["warnings"] if w["code"] == "ignored-fields"]
    body = {"model": "claude-sonnet-4-5", "messages": messages, "max_tokens": 10, "thinking": {"type": "enabled"}}
    answer = post(client, body, "/v1/messages/count_tokens")
    said = [w["message"] for w in answer["warnings"] if w["code"] == "ignored-fields"][0]
    assert said.count("thinking") == 2 and "change the provider's own count" not in said  # named, and why
    assert "thinking changes the provider's own count, not tokprof's" in said
    assert "max_tokens" not in json.dumps(answer["warnings"])  # a generation option, not part of the prompt
