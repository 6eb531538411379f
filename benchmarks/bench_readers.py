"""The agent readers' cost in session length (#45.4): reading a session of 8x the calls takes at most
about 8x the CPU and holds about 8x the memory, not 64x.

For each reader of ``long_sessions.WRITERS`` (pi, Qwen Code, Cline, Gemini CLI, OpenCode, Claude
Code), a session of ``--calls`` calls and one of 8 times as many are read whole
(``tokprof.formats.read_trace``: the reader only, no tokenizer), and the CPU time (median of
``--repeat``) and the peak of memory allocated while reading (``tracemalloc``, one run) are printed
with their ratios. Limit: a CPU ratio of at most 10 (8 plus noise); before #45.4 pi, Qwen Code and
Cline held a list of the whole history per entry or request (quadratic: pi 16,000 entries 63 s and
1.64 GB).

Usage: python benchmarks/bench_readers.py [--calls 1000] [--repeat 3] [--only pi,cline]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_logs import cpu  # noqa: E402
from long_sessions import WRITERS  # noqa: E402
from tokprof.formats import read_trace  # noqa: E402

LIMIT = 10.0


def peak(path: Path) -> int:
    tracemalloc.start()
    try:
        read_trace(str(path))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated format names")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(WRITERS)
    print("| reader | calls | CPU s | 8x calls | CPU s | CPU ratio | peak MB | peak MB 8x | memory ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            small = WRITERS[name](Path(tmp) / f"{name}-1", args.calls)
            large = WRITERS[name](Path(tmp) / f"{name}-8", 8 * args.calls)
            t1 = cpu(lambda: read_trace(str(small)), args.repeat)
            t8 = cpu(lambda: read_trace(str(large)), args.repeat)
            m1, m8 = peak(small), peak(large)
            ratio = t8 / t1 if t1 else float("inf")
            worst = max(worst, ratio)
            print(
                f"| {name} | {args.calls:,} | {t1:.3f} | {8 * args.calls:,} | {t8:.3f} | {ratio:.1f} "
                f"| {m1 / 1e6:.1f} | {m8 / 1e6:.1f} | {m8 / m1:.1f} |"
            )
    verdict = "within" if worst <= LIMIT else "OVER"
    print(f"\nworst CPU ratio {worst:.1f}: {verdict} the limit of {LIMIT:g}")
    return 0 if worst <= LIMIT else 1


if __name__ == "__main__":
    raise SystemExit(main())
