"""tokprof record's live line (issue #28 item 4): the figures of each recorded call as it completes.

The records are made by the recording's own code (:func:`tokprof.frontends.record.store.record_of`) from
hand-written Anthropic exchanges: a main conversation that offers tools, a side call without tools,
a count_tokens call and an error."""

from __future__ import annotations

import json

from tokprof.live_record import LiveRecording
from tokprof.frontends.record.run import call_line, live_line
from tokprof.frontends.record.store import Exchange, record_of

TOOLS = [
    {
        "name": "Read",
        "description": "Read a file from the workspace",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]
SYSTEM = "You are a careful coding agent. " * 30


def exchange(request: dict, response: dict, status: int = 200, path: str = "/v1/messages") -> dict:
    return record_of(
        Exchange(
            1.0,
            "POST",
            "https://api.anthropic.com" + path,
            {},
            json.dumps(request).encode(),
            2.0,
            status,
            {"content-type": "application/json"},
            json.dumps(response).encode(),
            False,
            True,
        )
    )


def reply(prompt: int, read: int) -> dict:
    return {
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "done"}],
        "usage": {
            "input_tokens": prompt - read - 100,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": read,
            "output_tokens": 20,
        },
    }


def main_call(turns: int) -> dict:
    messages: list[dict] = [{"role": "user", "content": "read the config"}]
    for i in range(turns):
        messages += [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {"path": f"f{i}"}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "key = value\n" * 200}],
            },
        ]
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": SYSTEM, "tools": TOOLS, "messages": messages}


def test_each_call_gets_its_figures(tmp_path):
    live = LiveRecording(str(tmp_path / "r.jsonl"))
    first = live.add(exchange(main_call(0), reply(20_000, 0)))
    side = live.add(
        exchange(
            {
                "model": "claude-haiku-4-5",
                "max_tokens": 10,
                "messages": [{"role": "user", "content": "a title for this"}],
            },
            reply(300, 0),
        )
    )
    count = live.add(exchange(main_call(1), {"input_tokens": 900}, path="/v1/messages/count_tokens"))
    error = live.add(exchange(main_call(1), {"type": "error", "error": {"type": "overloaded_error"}}, status=529))
    second = live.add(exchange(main_call(1), reply(150_000, 19_000)))
    assert count is None and error is None
    assert first is not None and side is not None and second is not None
    for figures in (first, side, second):
        assert figures.estimate and figures.basis == "reported"
        assert figures.buckets is not None and sum(figures.buckets.values()) == figures.prompt
        assert all(v >= 0 for v in figures.buckets.values())
    assert first.buckets["system"] > 0 and first.buckets["tool_definitions"] > 0
    assert second.buckets["tool_results"] > 0 and second.window == 200_000
    assert second.past == (0.7,) and second.crossed == (0.7,) and second.added == 130_000
    assert side.crossed == () and side.added is None  # a side call is not the main conversation
    assert second.cache_read_share == round(19_000 / 170_300, 6)
    assert second.cost is not None and second.cost > first.cost > 0

    line = call_line(second)
    assert line.startswith("tokprof record: claude-sonnet-4-5 · prompt 150,000 = system ")
    assert "(estimate) · ctx 75% of 200k, past 70% · cache read 11% so far · $" in line
    assert line.endswith(" so far")


def test_lines_that_are_no_call_keep_the_short_line(tmp_path):
    record = exchange(main_call(0), {"type": "error", "error": {"type": "overloaded_error"}}, status=529)
    assert live_line(record) == "tokprof record: claude-sonnet-4-5 messages · HTTP 529 · prompt not recorded"


def test_log_text_is_escaped_in_the_line(tmp_path):
    live = LiveRecording(str(tmp_path / "r.jsonl"))
    request = {**main_call(0), "model": "claude-sonnet-4-5\x1b[2J"}
    figures = live.add(exchange(request, reply(20_000, 0)))
    assert figures is not None and "\x1b" not in call_line(figures)


def test_the_lines_are_made_off_the_proxy_loop(tmp_path):
    from tokprof.frontends.record.run import LiveLines

    written: list[str] = []
    lines = LiveLines(str(tmp_path / "r.jsonl"), written.append)
    lines(exchange(main_call(0), reply(20_000, 0)))
    lines(exchange(main_call(1), {"input_tokens": 900}, path="/v1/messages/count_tokens"))
    lines.close()
    assert len(written) == 2 and "prompt 20,000 = " in written[0] and "count_tokens" in written[1]


def test_usage_that_is_not_numbers_never_stops_the_lines(tmp_path):
    """#45 item 7: a response whose usage fields are not numbers killed the live-line thread (the
    short line failed on them too): every later call lost its line."""
    from tokprof.frontends.record.run import LiveLines

    written: list[str] = []
    lines = LiveLines(str(tmp_path / "r.jsonl"), written.append)
    for usage in (
        {"input_tokens": "many", "cache_read_input_tokens": "x", "output_tokens": None},
        {"input_tokens": [1], "cache_creation_input_tokens": {"a": 1}},
        {"prompt_tokens": "12", "prompt_tokens_details": {"cached_tokens": "3"}},
        {"input_tokens": True, "cache_read_input_tokens": -5},
        "not an object",
    ):
        lines(exchange(main_call(0), {**reply(20_000, 0), "usage": usage}))
    lines(exchange(main_call(1), reply(30_000, 1_000)))
    lines.close()
    assert lines.thread.is_alive() is False and len(written) == 6, written
    assert all(line.startswith("tokprof record: ") and "\n" not in line for line in written)
    assert "prompt 30,000 = " in written[-1]
    assert not any("prompt 0" in line or "many" in line for line in written[:-1])


def test_the_short_line_never_shows_a_query():
    record = exchange(main_call(0), {"type": "error"}, status=500, path="/v1/messages?sig=abc123&key=k")
    assert "sig" not in live_line(record) and "abc123" not in live_line(record)
