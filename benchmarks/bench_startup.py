"""Start-up: how long `tokprof --help`, `tokprof --version`, `tokprof statusline` and one-call
profiles take, against the interpreter's own start (`python -c pass`), in fresh processes.

Usage: python benchmarks/bench_startup.py [--repeat 9] [--against DIR]

Prints a Markdown table: the median wall time and CPU time (user + system, what the process itself
used: steadier than wall time on shared cores) of each command, what each adds to `python -c pass`,
and those as ratios of the stated limit (help, version and the status line: 0.3 s added; a one-call
profile: 0.5 s added, issues #17 and #32). Ratios under 1 meet the limit. The one-call profiles are
of a model genai-prices does not price (Qwen2.5) and of one it does (Claude Sonnet 4). The caches
are warmed first, in a temporary cache (a first run converts the vocabulary once, and writes the price
table and the status line's state; that is not start-up), and the commands run with Python's bytecode
cache as an installed package has it (``PYTHONDONTWRITEBYTECODE`` is left out of their environment:
without the cache every start compiles tokprof's modules again, about 0.1 s more).

``--against DIR`` times another checkout of tokprof too (DIR is its root; both run with the same
interpreter and packages, the tree in ``PYTHONPATH``), alternating a run of each so that both see the
same load, and prints both trees' medians and the ratio of this tree's CPU added to DIR's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: What each command may add to the interpreter's start, in seconds.
LIMITS = {"--help": 0.3, "--version": 0.3, "statusline": 0.3, "profile (1 call)": 0.5, "profile (1 call, priced)": 0.5}


#: The commands' environment: with the bytecode cache.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
#: The commands' working directory: not a checkout's root, whose ``tokprof`` package ``python -m``
#: would import ahead of ``PYTHONPATH`` (then ``--against`` timed the same tree twice).
CWD = tempfile.gettempdir()


def timed(args: list[str], repeat: int, stdin: str = "") -> tuple[float, float]:
    """The median wall time and the median CPU time (user + system) of ``repeat`` runs."""
    return alternated(args, repeat, [dict(ENV, PYTHONPATH=str(Path(__file__).resolve().parents[1]))], stdin)[0]


def alternated(args: list[str], repeat: int, envs: list[dict[str, str]], stdin: str = "") -> list[tuple[float, float]]:
    """Per environment, the median wall time and the median CPU time (user + system) of ``repeat``
    runs, a run in each environment in turn."""
    walls: list[list[float]] = [[] for _ in envs]
    cpus: list[list[float]] = [[] for _ in envs]
    for _ in range(repeat):
        for i, env in enumerate(envs):
            wall, cpu = _run(args, env, stdin)
            walls[i].append(wall)
            cpus[i].append(cpu)
    return [(statistics.median(w), statistics.median(c)) for w, c in zip(walls, cpus)]


def _run(args: list[str], env: dict[str, str], stdin: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        args, check=True, input=stdin.encode(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=CWD
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--against", metavar="DIR", help="another checkout's root, timed alternately")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ENV.update(TOKPROF_CACHE_DIR=str(Path(tmp) / "cache"), XDG_CACHE_HOME=str(Path(tmp) / "xdg"))  # not the user's
        messages = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
        log = Path(tmp) / "one.json"
        log.write_text(json.dumps({"model": "Qwen/Qwen2.5-7B-Instruct", "messages": messages}))
        priced = Path(tmp) / "priced.json"
        priced.write_text(json.dumps({"model": "claude-sonnet-4-20250514", "messages": messages}))
        transcript = Path(tmp) / "session.jsonl"
        transcript.write_text(
            json.dumps(
                {
                    "type": "assistant",
                    "sessionId": "s",
                    "uuid": "a1",
                    "timestamp": "2026-01-01T00:00:00Z",
                    "message": {
                        "id": "m1",
                        "role": "assistant",
                        "model": "claude-sonnet-4-20250514",
                        "content": [{"type": "text", "text": "hi"}],
                        "usage": {"input_tokens": 10, "cache_read_input_tokens": 5000, "output_tokens": 3},
                    },
                }
            )
            + "\n"
        )
        status = json.dumps({"transcript_path": str(transcript)})
        tokprof = [sys.executable, "-m", "tokprof"]
        commands = {
            "--help": (tokprof + ["--help"], ""),
            "--version": (tokprof + ["--version"], ""),
            "statusline": (tokprof + ["statusline"], status),
            "profile (1 call)": (tokprof + ["profile", str(log), "--no-progress"], ""),
            "profile (1 call, priced)": (tokprof + ["profile", str(priced), "--no-progress"], ""),
        }
        envs = [dict(ENV, PYTHONPATH=str(Path(__file__).resolve().parents[1]))]  # this tree, not the installed one
        if args.against:  # both trees named in PYTHONPATH, not whichever one is installed
            envs = [
                dict(ENV, PYTHONPATH=str(Path(__file__).resolve().parents[1])),
                dict(ENV, PYTHONPATH=str(Path(args.against).resolve())),
            ]
        for command, stdin in commands.values():  # warm the tokenizer, price table and bytecode caches
            for env in envs:
                subprocess.run(command, check=True, capture_output=True, input=stdin.encode(), env=env, cwd=CWD)
        for env in envs:  # each tree's own code, whatever is installed
            where = subprocess.run(
                [sys.executable, "-c", "import tokprof; print(tokprof.__file__)"],
                check=True,
                capture_output=True,
                text=True,
                env=env,
                cwd=CWD,
            ).stdout.strip()
            expected = env.get("PYTHONPATH")
            if expected and not where.startswith(str(Path(expected).resolve())):
                raise SystemExit(f"{expected}: tokprof imported from {where}")
        if args.against:
            compare(commands, args.repeat, envs, args.against)
            return
        base_wall, base_cpu = timed([sys.executable, "-c", "pass"], args.repeat)
        print(f"Machine: {platform.machine()}, Python {platform.python_version()}, median of {args.repeat} runs\n")
        print(
            "| command | wall | CPU | wall added to `python -c pass` | CPU added | limit | wall added / limit "
            "| CPU added / limit |"
        )
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        print(f"| `python -c pass` | {base_wall:.3f} s | {base_cpu:.3f} s | | | | | |")
        for name, (command, stdin) in commands.items():
            took, cpu = timed(command, args.repeat, stdin)
            added, cpu_added = took - base_wall, cpu - base_cpu
            limit = LIMITS[name]
            print(
                f"| `tokprof {name}` | {took:.3f} s | {cpu:.3f} s | {added:.3f} s | {cpu_added:.3f} s | {limit} s "
                f"| {added / limit:.2f} | {cpu_added / limit:.2f} |"
            )


def compare(commands: dict[str, tuple[list[str], str]], repeat: int, envs: list[dict[str, str]], against: str) -> None:
    """This tree's (A) and ``against``'s (B) medians, measured alternately, and A's CPU added over B's."""
    (base_wall, base_cpu), _ = alternated([sys.executable, "-c", "pass"], repeat, envs)
    print(f"Machine: {platform.machine()}, Python {platform.python_version()}, median of {repeat} runs, alternated\n")
    print(f"`python -c pass`: {base_wall:.3f} s wall, {base_cpu:.3f} s CPU; B is {against}\n")
    print("| command | A wall | A CPU added | B wall | B CPU added | A / B CPU added | A CPU added / limit |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, (command, stdin) in commands.items():
        (a_wall, a_cpu), (b_wall, b_cpu) = alternated(command, repeat, envs, stdin)
        a_added, b_added = a_cpu - base_cpu, b_cpu - base_cpu
        print(
            f"| `tokprof {name}` | {a_wall:.3f} s | {a_added:.3f} s | {b_wall:.3f} s | {b_added:.3f} s "
            f"| {a_added / b_added:.2f} | {a_added / LIMITS[name]:.2f} |"
        )


if __name__ == "__main__":
    main()
