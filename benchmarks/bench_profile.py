"""Time `tokprof profile` on a log, in-process: model load, profiling, the catalogue, and peak memory.

Usage: python benchmarks/bench_profile.py [LOG] [--model qwen2.5] [--repeat 3]
Prints one Markdown table row per run, for the README's performance section.
"""

from __future__ import annotations

import argparse
import platform
import resource
import time
from pathlib import Path

from tokprof.analyses.tools import tools_report
from tokprof.formats import read_trace
from tokprof.models import resolve_model
from tokprof.profiling import profile_trace

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", nargs="?", default=str(ROOT / "samples" / "incident_session.json"))
    parser.add_argument("--model", default="qwen2.5")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    start = time.perf_counter()
    model = resolve_model(args.model)
    load = time.perf_counter() - start
    trace = read_trace(args.log)
    print(
        f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}, "
        f"model load {load:.2f} s (cached tokenizer)"
    )
    print("| log | calls | billed input | final prompt | profile (s) | tools (s) | billed tokens / s | peak RSS (MB) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for _ in range(args.repeat):
        model = resolve_model(args.model)  # a fresh model: no tokenizer segments cached from the last run
        start = time.perf_counter()
        profile = profile_trace(trace, model)
        profiled = time.perf_counter() - start
        summary = profile.summary()
        start = time.perf_counter()
        tools_report(trace, model, summary.billed_input)
        priced = time.perf_counter() - start
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"| {Path(args.log).name} | {summary.calls} | {summary.billed_input:,} | "
            f"{summary.final_prompt:,} | {profiled:.2f} | {priced:.2f} | "
            f"{summary.billed_input / profiled:,.0f} | {rss:.0f} |"
        )


if __name__ == "__main__":
    main()
