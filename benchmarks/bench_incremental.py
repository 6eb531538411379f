"""How much an unchanged ``--incremental`` re-run costs against the first run (#43 item 5).

Makes a folder of generated Claude Code sessions (``bench_tables.generate``), profiles it into Parquet tables with
``--incremental`` (the first run profiles every session and writes the state file), then runs the same
command again with nothing changed, and prints each run's CPU seconds (whole process, the least of
``--repeat`` runs) and the ratio. The target is a re-run at most 10% of the first run's work.

Usage: python benchmarks/bench_incremental.py [--sessions 400] [--calls 8] [--repeat 2] [--jobs 1]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_tables import generate  # noqa: E402

TARGET = 0.10


def _cpu(command: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=400)
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    env = dict(os.environ, COLUMNS="100")
    with tempfile.TemporaryDirectory() as tmp:
        logs = Path(tmp, "logs")
        generate(logs, args.sessions, args.calls, seed=7)
        out = Path(tmp, "out")
        command = [
            sys.executable,
            "-m",
            "tokprof",
            "profile",
            str(logs),
            "-f",
            "parquet",
            "-o",
            f"{out}/",
            "--incremental",
            "--no-progress",
            "--jobs",
            str(args.jobs),
        ]
        firsts, reruns = [], []
        for _ in range(args.repeat):
            shutil.rmtree(out, ignore_errors=True)
            firsts.append(_cpu(command, env))
            reruns.append(_cpu(command, env))
        first, rerun = min(firsts), min(reruns)
        idle = _cpu([sys.executable, "-m", "tokprof", "--version"], env)
    ratio = rerun / first
    print(f"{args.sessions} sessions of {args.calls} calls")
    print(f"first run  {first:7.2f} s CPU")
    print(f"re-run     {rerun:7.2f} s CPU  ({ratio:.1%} of the first; target at most {TARGET:.0%})")
    print(f"start-up   {idle:7.2f} s CPU  (tokprof --version, included in both)")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
