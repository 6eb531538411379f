"""The agent sessions' readers are folds (#43.1, #43.4): a call is given as soon as no later record can
change it, and the reader holds none of the calls it gave, so that a caller that drops each call holds
the log's largest prompt, not the log. The calls are the whole read's (the format tests check them)."""

from __future__ import annotations

import gc
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tokprof.formats import open_log
from tokprof.formats.folds import TimeOrder
from tokprof.formats.neutral import in_time_order
from tokprof.trace import Call

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from long_sessions import MORE, WRITERS  # noqa: E402

CALLS = 60


SESSIONS = {**{name: WRITERS[name] for name in ("pi", "qwen-code", "cline", "gemini-cli", "opencode")}, **MORE}


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_calls_are_given_as_they_are_read_and_not_held(tmp_path, name):
    """Two thirds through the session, the calls given before are gone once the caller dropped them:
    neither the reader nor the log holds them (a whole read holds every call to the end)."""
    path = SESSIONS[name](tmp_path, CALLS)
    given = 0
    with open_log(str(path)) as log:
        assert log.format.name == name
        for call in log.calls():
            given += 1
            del call
            if given == 2 * CALLS // 3:
                gc.collect()
                alive = sum(1 for thing in gc.get_objects() if isinstance(thing, Call))
                assert alive <= 2, f"{alive} calls held"
        assert log.trace.calls == []
    assert given == CALLS


def _calls(rng: random.Random) -> tuple[list[list[Call]], list[tuple[str, Call]]]:
    """Calls of a few threads in the order a log written as it happens makes them (times never go back;
    ties among them, and calls without a time right after a call of their thread), each thread's in its
    own list."""
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    threads = ["", "a", "b", "c"][: rng.randint(1, 4)]
    by_thread: dict[str, list[Call]] = {name: [] for name in threads}
    made: list[tuple[str, Call]] = []
    second = 0
    for k in range(rng.randint(0, 30)):
        second += rng.choice([0, 0, 1, 2])
        time: datetime | None = start + timedelta(seconds=second)
        thread = rng.choice(threads)
        if made and made[-1][1].time is not None and rng.random() < 0.3:  # goes where the call before it went
            thread, time = made[-1][0], None
        call = Call(index=0, messages=[], tools=None, where=f"call {k}", time=time, thread=thread)
        by_thread[thread].append(call)
        made.append((thread, call))
    return list(by_thread.values()), made


@pytest.mark.parametrize("seed", range(40))
def test_time_order_gives_in_time_order_s_order(seed):
    """The fold's time order (each call held until a later one is made) is the whole read's
    ``in_time_order`` on a log whose times never go back."""
    rng = random.Random(seed)
    sequences, made = _calls(rng)
    expected = [call.where for call in in_time_order(sequences)]
    order = TimeOrder()
    for sequence in sequences:  # threads opened in the order in_time_order lists them
        order.thread(sequence[0].thread if sequence else f"empty {len(order.threads)}")
    given: list[Call] = []
    for thread, call in made:
        order.place(thread, call)
        given += order.take()
    given += order.rest()
    assert [call.where for call in given] == expected
    assert [call.index for call in given] == list(range(len(given)))


def test_no_agent_session_reader_reads_its_log_whole():
    """Every agent session reader of #43.1's second part is a fold: none is declared with
    ``whole_read_format``."""
    from tokprof.formats import registry

    names = (
        "cline opencode gemini-cli pi qwen-code copilot-cli kimi-code kimi-cli openhands aider crush goose amp droid "
        "codebuff cursor cursor-agent continue zed hermes kilo-cli"
    ).split()
    whole = [name for name in names if "whole_read_format" in registry.by_name(name).reader.__qualname__]
    assert whole == []
