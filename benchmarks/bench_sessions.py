"""``tokprof sessions`` over many sessions: the first listing reads every session file; a second one
reads none that did not change (each file's row and calls' spend are kept in the state folder), and
its spend by day comes from what was kept. Prints the times and their ratio (no timed assertion)::

    python benchmarks/bench_sessions.py [SESSIONS] [CALLS]

The sessions are generated Claude Code transcripts (``bench_memory.py``'s many-calls shape) below a
temporary HOME; nothing outside it is read or written.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main(sessions: int = 500, calls: int = 20) -> None:
    from bench_memory import generate_calls

    from tokprof.frontends.cli import main as cli

    home = Path(tempfile.mkdtemp(prefix="tokprof-bench-sessions-"))
    try:
        project = home / ".claude" / "projects" / "-bench"
        project.mkdir(parents=True)
        first = project / "s0.jsonl"
        generate_calls(first, calls, calls + 1, 0)
        for number in range(1, sessions):
            shutil.copy(first, project / f"s{number}.jsonl")
        os.environ.update(HOME=str(home), TOKPROF_STATE_DIR=str(home / "state"), COLUMNS="120")
        for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME"):
            os.environ.pop(name, None)
        times = []
        for argv in (["sessions", "-f", "json"], ["sessions", "-f", "json"], ["sessions", "--by", "day", "-f", "json"]):
            start = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()):
                assert cli(argv) == 0
            times.append(time.perf_counter() - start)
        size = (home / "state" / "sessions-cache.json").stat().st_size
        print(
            f"{sessions} sessions of {calls} calls: first listing {times[0]:.2f} s, second {times[1]:.2f} s "
            f"({times[0] / times[1]:.1f}x faster), spend by day {times[2]:.2f} s; kept {size / 1e6:.1f} MB"
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
