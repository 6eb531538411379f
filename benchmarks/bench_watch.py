"""tokprof watch and tokprof statusline: the cost of an update against what was appended.

1. A generated Claude Code session of ``--calls`` calls (default 1,000; three lines per call: a user
   turn, an assistant tool call with usage, a tool result of about 1-2 kB) is written in steps of
   ``--step`` calls while a :class:`tokprof.live.LiveSession` follows it, once reading only (the
   figures from usage, as the status line does) and once counting buckets (claude-proxy). Per
   step: the seconds of its update. Limit: the last tenth of the session's updates take at most
   ``2x`` the first tenth's (an update costs what was appended, not the session's size).
2. ``tokprof statusline`` (a process, as Claude Code runs it) on a 200-call session: the first call
   (reads it all), then repeat calls each after one more call was appended. Limit: 300 ms each
   (Claude Code runs it at most every 300 ms). The bucket counter it starts
   (:mod:`tokprof.frontends.statusline_counter`) runs meanwhile, on the same two cores: the seconds until its
   buckets of the session's calls are written, the first time and after each appended call, are
   printed too (no limit: the line shows the newest buckets written).

3. One call appended to a 1,000-call session (issue #31, #32 item 2): the CPU time of re-profiling it
   from the state ``tokprof watch`` keeps (a :class:`tokprof.live.LiveSession` counting buckets with
   claude-proxy: the new call is spliced onto the previous call's render, :mod:`tokprof.attribution.splice`) and
   from the state ``tokprof statusline`` keeps in its cache directory (loaded, updated and saved, in
   process). Limit: 50 ms each; the median of ``--repeat`` appended calls.

Usage: python benchmarks/bench_watch.py [--calls 1000] [--step 10] [--repeat 5]
The session is generated here (no corpus file); HOME and XDG_CACHE_HOME point to a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def call_lines(i: int) -> str:
    base = {"sessionId": "bench", "isSidechain": False, "timestamp": f"2025-10-01T10:00:{i % 60:02d}Z"}
    prompt = 12_000 + 900 * i
    rows = [
        {
            **base,
            "type": "user",
            "uuid": f"u{i}",
            "parentUuid": f"r{i - 1}" if i else None,
            "message": {"role": "user", "content": f"step {i}: check worker {i % 17} and its queue"},
        },
        {
            **base,
            "type": "assistant",
            "uuid": f"a{i}",
            "parentUuid": f"u{i}",
            "requestId": f"req{i}",
            "message": {
                "id": f"msg{i}",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "stop_reason": "tool_use",
                "content": [
                    {"type": "text", "text": f"Looking at worker {i}."},
                    {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": f"grep w{i} log"}},
                ],
                "usage": {
                    "input_tokens": 6,
                    "cache_creation_input_tokens": 900,
                    "cache_read_input_tokens": prompt - 906,
                    "output_tokens": 80,
                },
            },
        },
        {
            **base,
            "type": "user",
            "uuid": f"r{i}",
            "parentUuid": f"a{i}",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"t{i}",
                        "content": "\n".join(
                            f"{t} worker={i} queue={t * 7 % 97} retry={t % 3}" for t in range(40 + i % 30)
                        ),
                    }
                ],
            },
        },
    ]
    return "".join(json.dumps(r) + "\n" for r in rows)


def follow(calls: int, step: int, folder: Path, count: bool) -> tuple[list[float], float]:
    from tokprof.live import LiveSession

    path = folder / f"session-{count}.jsonl"
    path.write_text("")
    live = LiveSession(str(path), count=count)
    live.update()
    if count:
        live._model("claude-sonnet-4-5")  # the tokenizer loads once, before the timing
    times = []
    for start in range(0, calls, step):
        with open(path, "a") as out:
            out.write("".join(call_lines(i) for i in range(start, min(start + step, calls))))
        t = time.perf_counter()
        found = live.update()
        times.append(time.perf_counter() - t)
        assert len(found) == min(step, calls - start)
    return times, path.stat().st_size / 1e6


def _counted(folder: Path, transcript: Path) -> int | None:
    """The call whose buckets the counter of ``transcript`` wrote last (the counter of part 3's
    session may still be writing its own file in the same folder)."""
    for found in (folder / "cache" / "tokprof" / "statusline").glob("*.buckets.json"):
        try:
            doc = json.loads(found.read_text())
            if doc["transcript"] == os.path.abspath(transcript):
                return doc["call"]
        except (OSError, ValueError, KeyError):
            continue
    return None


def _wait_counted(folder: Path, transcript: Path, call: int, limit: float = 120.0) -> float:
    t = time.perf_counter()
    while (_counted(folder, transcript) or -1) < call and time.perf_counter() - t < limit:
        time.sleep(0.02)
    return time.perf_counter() - t


def statusline(folder: Path, calls: int = 200, repeats: int = 10) -> tuple[float, list[float], float, list[float]]:
    path = folder / "status.jsonl"
    path.write_text("".join(call_lines(i) for i in range(calls)))
    payload = json.dumps(
        {
            "session_id": "bench",
            "transcript_path": str(path),
            "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
            "workspace": {"current_dir": str(folder)},
            "cost": {"total_cost_usd": 1.0},
        }
    )
    env = dict(
        os.environ,
        HOME=str(folder),
        XDG_CACHE_HOME=str(folder / "cache"),
        PYTHONPATH=str(ROOT),
        TOKPROF_STATUSLINE_IDLE="30",
    )

    def once() -> float:
        t = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "tokprof", "statusline"],
            input=payload,
            text=True,
            capture_output=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0 and done.stdout.startswith("ctx"), done.stdout + done.stderr
        return time.perf_counter() - t

    try:
        first = once()  # starts the counter
        first_counted = _wait_counted(folder, path, calls - 1)
        repeat, lag = [], []
        for i in range(calls, calls + repeats):
            with open(path, "a") as out:
                out.write(call_lines(i))
            repeat.append(once())
            lag.append(_wait_counted(folder, path, i))
            assert (
                "results"
                in subprocess.run(
                    [sys.executable, "-m", "tokprof", "statusline"],
                    input=payload,
                    text=True,
                    capture_output=True,
                    env=env,
                    timeout=60,
                ).stdout
            )
    finally:
        for lock in (folder / "cache" / "tokprof" / "statusline").glob("*.lock"):
            pid = lock.read_text().strip()
            if pid and "statusline_counter" in (
                Path(f"/proc/{pid}/cmdline").read_text(errors="replace") if Path(f"/proc/{pid}").exists() else ""
            ):
                try:
                    os.kill(int(pid), 15)  # the counter this benchmark started
                except ProcessLookupError:
                    pass
    return first, repeat, first_counted, lag


def appended_one(folder: Path, calls: int, repeat: int) -> tuple[list[float], list[float], int]:
    """CPU seconds of re-profiling a ``calls``-call session after one call is appended: from watch's
    state and from statusline's; and how many calls watch's model spliced."""
    from tokprof.frontends import statusline as status
    from tokprof.live import LiveSession

    path = folder / "appended.jsonl"
    path.write_text("".join(call_lines(i) for i in range(calls)))
    live = LiveSession(str(path), count=True)
    live.update(count_every=True)
    payload = {"session_id": "bench", "transcript_path": str(path), "model": {"id": "claude-sonnet-4-5"}}
    status.line(payload)  # the state is in the cache directory from here on
    watch, line = [], []
    for i in range(calls, calls + repeat):
        with open(path, "a") as out:
            out.write(call_lines(i))
        t = time.process_time()
        found = live.update()
        watch.append(time.process_time() - t)
        assert len(found) == 1 and found[0].buckets is not None
        t = time.process_time()
        assert status.line(payload).startswith("ctx")
        line.append(time.process_time() - t)
    model = next(iter(live._models.values()))
    return watch, line, model._attributor.spliced


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--step", type=int, default=10)
    parser.add_argument("--statusline-only", action="store_true", help="Only the status line's part.")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HOME"], os.environ["XDG_CACHE_HOME"] = tmp, str(Path(tmp) / "cache")
        watch, line, spliced = appended_one(Path(tmp), args.calls, args.repeat)
        print(f"| one call appended to {args.calls} calls, CPU ms (limit 50) | median | slowest |\n| --- | --- | --- |")
        print(
            f"| watch (counted, claude-proxy; {spliced} calls spliced) | {1000 * statistics.median(watch):.1f} | "
            f"{1000 * max(watch):.1f} |"
        )
        print(
            f"| statusline (state loaded, updated, saved) | {1000 * statistics.median(line):.1f} | "
            f"{1000 * max(line):.1f} |\n"
        )
        print(
            f"| watch: {args.calls} calls, updates of {args.step} calls | first tenth, median s | last tenth, "
            "median s | ratio (limit 2) |"
        )
        print("| --- | --- | --- | --- |")
        for count in () if args.statusline_only else (False, True):
            times, size = follow(args.calls, args.step, Path(tmp), count)
            tenth = max(len(times) // 10, 1)
            early, late = statistics.median(times[:tenth]), statistics.median(times[-tenth:])
            what = "read, figures from usage" if not count else "read and counted (claude-proxy)"
            print(f"| {what}, {size:.1f} MB | {early:.4f} | {late:.4f} | {late / early:.2f} |")
        first, repeat, first_counted, lag = statusline(Path(tmp))
        print(f"\n| statusline, 200 calls | seconds |\n| --- | --- |\n| first call | {first:.3f} |")
        print(f"| repeat calls, median (limit 0.300) | {statistics.median(repeat):.3f} |")
        print(f"| repeat calls, slowest | {max(repeat):.3f} |")
        print(f"| the counter's first buckets, after the first call | {first_counted:.3f} |")
        print(f"| the newest call's buckets, after its repeat call, median | {statistics.median(lag):.3f} |")


if __name__ == "__main__":
    main()
