"""The pieces of tokprof record that need no server: redaction, rebuilding streams, the file."""

import json
import os
import stat

import tokprof
from tokprof.frontends.record.rebuild import rebuild
from tokprof.frontends.record.redact import redacted
from tokprof.frontends.record.store import Exchange, Recording

ANTHROPIC_STREAM = (
    'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","type":"message","role":"assistant",'
    '"model":"claude-sonnet-4-5","content":[],"usage":{"input_tokens":12,"cache_read_input_tokens":30,'
    '"output_tokens":1}}}\n\n'
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}\n\n'
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}\n\n'
    'event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"Read","input":{}}}\n\n'
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"path\\": "}}\n\n'
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\\"a\\"}"}}\n\n'
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}\n\n'
    'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


def test_secret_headers_are_redacted():
    out = redacted(
        [
            ("Authorization", "Bearer sk-1"),
            ("x-api-key", "sk-2"),
            ("Cookie", "a=b"),
            ("X-Goog-Api-Key", "k"),
            ("x-session-token", "t"),
            ("anthropic-version", "2023-06-01"),
        ]
    )
    assert out == {
        "authorization": "[redacted]",
        "x-api-key": "[redacted]",
        "cookie": "[redacted]",
        "x-goog-api-key": "[redacted]",
        "x-session-token": "[redacted]",
        "anthropic-version": "2023-06-01",
    }


SECRETS = (
    "sk-ant-api03-AbCdEf123456",
    "key-3ax6xnjp29jd6fds4gc373sgvjxteol0",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUv",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.c2lnbmF0dXJl",
    "hunter2-by-name",
)


def test_secrets_are_redacted_by_name_and_by_look():
    """#45 item 6: helicone-auth, x-authentication and other vendors' auth headers were written in
    clear; so is any header whose value looks like a credential, whatever its name."""
    out = redacted(
        [
            ("Helicone-Auth", "Bearer " + SECRETS[0]),
            ("X-Authentication", SECRETS[5]),
            ("cf-aig-authorization", SECRETS[5]),
            ("x-portkey-virtual-key", SECRETS[5]),
            ("x-amz-security-token", SECRETS[5]),
            ("x-goog-iap-jwt-assertion", SECRETS[5]),
            ("x-gateway", "Basic dXNlcjpwYXNz"),
            ("x-upstream", SECRETS[1]),
            ("x-forwarded-for-github", SECRETS[2]),
            ("x-google", SECRETS[3]),
            ("x-id", SECRETS[4]),
            ("anthropic-version", "2023-06-01"),
            ("anthropic-beta", "prompt-caching-2024-07-31,interleaved-thinking-2025-05-14"),
            ("user-agent", "claude-cli/2.0.14 (external, cli)"),
            ("x-stainless-package-version", "0.60.0"),
            ("request-id", "req_011CUxMZ3h7yB5rKzP9w2Jd4"),
            ("x-task", "risk-assessment-2025-01"),
        ]
    )
    kept = {"anthropic-version", "anthropic-beta", "user-agent", "x-stainless-package-version", "request-id", "x-task"}
    assert {k for k, v in out.items() if v != "[redacted]"} == kept
    assert not any(secret in json.dumps(out) for secret in SECRETS)


def test_urls_lose_signatures_keys_and_keys_in_the_path():
    from tokprof.frontends.record.redact import safe_url

    url = (
        "https://me:pw@gw.example:8443/v1/" + SECRETS[0] + "/chat/completions?api-version=2024-06-01"
        "&sig=c2lnbmF0dXJl&se=2030-01-01&X-Amz-Signature=abcdef&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20250101"
        "&key=" + SECRETS[3] + "&x=" + SECRETS[1] + "#frag"
    )
    safe = safe_url(url)
    assert safe.startswith("https://gw.example:8443/v1/[redacted]/chat/completions?api-version=2024-06-01&")
    for gone in ("me:pw", "c2lnbmF0dXJl", "abcdef", "AKIAIOSFODNN7EXAMPLE", "frag", *SECRETS):
        assert gone not in safe, gone
    assert "se=2030-01-01" in safe


def test_an_anthropic_stream_rebuilds_with_usage():
    body = rebuild(ANTHROPIC_STREAM)
    assert body["content"] == [
        {"type": "text", "text": "Hello"},
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "a"}},
    ]
    assert body["usage"] == {"input_tokens": 12, "cache_read_input_tokens": 30, "output_tokens": 9}
    assert body["stop_reason"] == "tool_use"


def test_a_chat_stream_rebuilds_with_usage():
    chunks = [
        {
            "object": "chat.completion.chunk",
            "id": "c",
            "model": "gpt-4o",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}}],
        },
        {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": " there"}, "finish_reason": "stop"}],
        },
        {"object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}},
    ]
    text = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    body = rebuild(text)
    assert body["choices"][0]["message"]["content"] == "Hi there"
    assert body["usage"] == {"prompt_tokens": 5, "completion_tokens": 2}


def test_a_recording_is_private_and_reads_as_a_capture(tmp_path):
    recording = Recording(str(tmp_path / "rec"), "/usr/bin/claude")
    request = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 10,
        "stream": True,
        "system": "Be brief.",
        "tools": [{"name": "mcp__git__status", "description": "git status", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    recording.append(
        Exchange(
            started=1.0,
            method="POST",
            url="https://u:p@api.anthropic.com/v1/messages?api_key=s&beta=true",
            request_headers=redacted([("x-api-key", "sk-secret")]),
            request_body=json.dumps(request).encode(),
            finished=2.0,
            status=200,
            response_headers={"content-type": "text/event-stream"},
            response_body=ANTHROPIC_STREAM.encode(),
            stream=True,
            complete=True,
        )
    )
    recording.close()
    assert stat.S_IMODE(os.stat(recording.path).st_mode) == 0o600
    assert os.path.basename(recording.path).endswith("-claude.jsonl")
    text = open(recording.path).read()
    assert "sk-secret" not in text and "u:p@" not in text and "api_key=s" not in text
    trace = tokprof.read_log(recording.path)
    assert len(trace.calls) == 1 and trace.calls[0].reported.prompt == 42
    assert [t["function"]["name"] if "function" in t else t["name"] for t in trace.calls[0].tools] == [
        "mcp__git__status"
    ]


def test_a_recording_profiles_as_the_same_requests_given_as_a_capture(tmp_path):
    request = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 10,
        "system": "Be brief.",
        "tools": [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "read a.txt"}],
    }
    reply = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "usage": {"input_tokens": 40, "output_tokens": 1},
    }
    recording = Recording(str(tmp_path / "rec"), "agent")
    recording.append(
        Exchange(
            1.0,
            "POST",
            "https://api.anthropic.com/v1/messages",
            {},
            json.dumps(request).encode(),
            2.0,
            200,
            {},
            json.dumps(reply).encode(),
            False,
            True,
        )
    )
    recording.close()
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"request": request, "response": reply}) + "\n")
    recorded = tokprof.profile(recording.path, model="qwen2.5")
    given = tokprof.profile(pairs, model="qwen2.5")
    assert [c.buckets for c in recorded.calls] == [c.buckets for c in given.calls]
    assert recorded.calls[0].buckets["tool_definitions"] > 0 and recorded.calls[0].buckets["system"] > 0
