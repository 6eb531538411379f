"""Recall probes against a stub OpenAI-compatible server on 127.0.0.1 that answers from the prompt it
receives: right when the prompt holds the fact, a plausible wrong value when it does not, and a
refusal, a slow answer or an error when the question asks for one."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import tokprof
from tokprof.runs.whatif import probe
from conftest import CHATML, tiny_model
from test_retention import SHARD, session
from test_whatif import make_trace, trace_of
from tokprof.analyses.probe import score, shape_of
from tokprof.frontends.cli import main


class Stub(BaseHTTPRequestHandler):
    bodies: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        Stub.bodies.append(body)
        question = body["messages"][-1]["content"]
        prompt = json.dumps(body["messages"])
        if "error" in question:
            self.send_response(500)
            self.end_headers()
            return
        if "slow" in question:
            time.sleep(1.0)
        answer = (
            "I cannot say."
            if "refuse" in question
            else f"The shard is {SHARD}."
            if SHARD in prompt
            else "The shard is pay-shard-3."
        )
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": answer}}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def model():
    chat = tiny_model(CHATML)
    chat.context_window = 400
    return tokprof.Model(chat)


@pytest.fixture
def trace():
    return make_trace(trace_of(session()))


def test_scores_tell_a_confident_wrong_answer_from_a_miss():
    assert shape_of("pay-shard-7").fullmatch("pay-shard-12")
    assert score("It is pay-shard-7.", "pay-shard-7") == "hit"
    assert score("It is pay-shard-3.", "pay-shard-7") == "wrong"
    assert score("The shard is pay-shard-71.", "pay-shard-7") == "wrong"  # the value whole, not a prefix of another
    assert score("I don't know.", "pay-shard-7") == "miss"
    # a value of one run (a number, a word) has no shape to be confidently wrong in: a miss
    assert (
        shape_of("7") is None and score("I saw 3 alerts.", "7") == "miss" and score("The value is 17.", "7") == "miss"
    )
    assert score("I have no idea.", "Bob") == "miss" and score("It was Bob.", "Bob") == "hit"


def test_each_policy_is_probed_and_scored(endpoint, model, trace):
    Stub.bodies.clear()
    report = probe(
        trace,
        "Which shard is affected?",
        SHARD,
        endpoint,
        ["window:4", "elide:1"],
        tokprof.Options(model=model),
        trials=2,
    )
    by = {r.policy: r for r in report.results}
    assert list(by)[0].startswith("control")
    assert by["full"].count("hit") == 2 and by["window:4"].count("wrong") == 2 and by["elide:1"].count("wrong") == 2
    assert by["control (the fact alone)"].count("hit") == 2
    assert all(r.prompt_tokens > 0 for r in report.results)
    assert len(Stub.bodies) == 2 * 4 and all(b["temperature"] == 0.0 and b["stream"] is False for b in Stub.bodies)
    arguments = [
        c["function"]["arguments"] for b in Stub.bodies for m in b["messages"] for c in m.get("tool_calls", [])
    ]
    assert arguments and all(isinstance(a, str) for a in arguments)  # as Chat Completions holds them


def test_refusals_errors_and_time_outs_are_answers_not_crashes(endpoint, model, trace):
    refused = probe(trace, "refuse: which shard?", SHARD, endpoint, ["window:4"], tokprof.Options(model=model))
    assert all(r.count("miss") == 1 for r in refused.results)
    failed = probe(trace, "error: which shard?", SHARD, endpoint, ["window:4"], tokprof.Options(model=model))
    assert all(r.count("error") == 1 and "HTTP 500" in r.answers[0].text for r in failed.results)
    slow = probe(
        trace, "slow: which shard?", SHARD, endpoint, ["window:4"], tokprof.Options(model=model), timeout=0.2, retries=0
    )
    assert all(r.count("error") == 1 for r in slow.results)


def test_a_dry_run_sends_nothing_and_the_budget_is_checked_first(endpoint, model, trace):
    Stub.bodies.clear()
    said = []
    report = probe(
        trace,
        "Which shard?",
        SHARD,
        endpoint,
        ["window:4"],
        tokprof.Options(model=model),
        trials=3,
        dry_run=True,
        announce=lambda n, tokens: said.append((n, tokens)),
    )
    assert not Stub.bodies and said[0][0] == 9 and all(not r.answers for r in report.results)
    with pytest.raises(tokprof.TokprofError, match="more than the budget of 5"):
        probe(
            trace, "Which shard?", SHARD, endpoint, ["window:4"], tokprof.Options(model=model), trials=3, max_requests=5
        )
    assert not Stub.bodies


def test_the_cli_says_what_it_sends_and_writes_a_table_or_json(endpoint, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    log = tmp_path / "log.json"
    log.write_text(json.dumps({"messages": session()}), encoding="utf-8")
    assert (
        main(
            [
                "probe",
                str(log),
                "--endpoint",
                endpoint,
                "--question",
                "Which shard?",
                "--expect",
                SHARD,
                "-p",
                "window:4",
                "--model",
                "qwen2.5",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "sending 3 requests" in captured.err and "window:4" in captured.out and "confident wrong" in captured.out
    assert (
        main(
            [
                "probe",
                str(log),
                "--endpoint",
                endpoint,
                "--question",
                "Which shard?",
                "--expect",
                SHARD,
                "-p",
                "window:4",
                "-f",
                "json",
                "--model",
                "qwen2.5",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "probe" and [r["policy"] for r in doc["results"]][1:] == ["full", "window:4"]
    assert doc["results"][2]["wrong"] == 1


def test_the_logs_own_answer_is_not_sent_back(endpoint, model):
    """The final prompt of a policy is what it keeps; the log's answer to it (written with the whole
    history) is left out, or it would carry back the fact the policy dropped."""
    messages = session()
    messages[-1] = {"role": "assistant", "content": f"So the shard is {SHARD}."}
    trace = make_trace(trace_of(messages))
    Stub.bodies.clear()
    report = probe(trace, "Which shard?", SHARD, endpoint, ["window:4"], tokprof.Options(model=model))
    assert {r.policy: r.answers[0].outcome for r in report.results}["window:4"] == "wrong"
    assert all(m.get("content") != f"So the shard is {SHARD}." for b in Stub.bodies for m in b["messages"])


def test_no_control_row_without_the_fact_in_the_log_and_no_pattern_to_expect(endpoint, model, trace):
    report = probe(
        trace, "Which shard?", "pay-shard-99", endpoint, ["window:4"], tokprof.Options(model=model), dry_run=True
    )
    assert [r.policy for r in report.results] == ["full", "window:4"] and "no control row" in report.notes[0]
    with pytest.raises(tokprof.TokprofError, match="pattern"):
        probe(
            trace,
            "Which shard?",
            "re:pay-shard-\\d",
            endpoint,
            ["window:4"],
            tokprof.Options(model=model),
            dry_run=True,
        )


def test_the_client_keeps_a_query_and_loopback_means_loopback():
    from tokprof.base.chat_client import ChatClient, is_loopback

    assert (
        ChatClient("https://h.example/openai/deployments/d?api-version=1").url
        == "https://h.example/openai/deployments/d/v1/chat/completions?api-version=1"
    )
    assert is_loopback("http://127.0.0.1:8080") and is_loopback("http://[::1]:9")
    assert not is_loopback("http://127.attacker.example:8080")
