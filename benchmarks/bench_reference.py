"""Profile one log with tokprof and with the plain reference implementation, in the same run.

Checks that the buckets (and warnings) agree call by call, and prints both times, their ratio, the
limit (rendering the final prompt once and tokenizing it once) and tokprof's peak memory, as a
Markdown table row for the README's performance section.

tokprof's time is ``profile_trace`` plus ``tools_report`` (the per-tool costs ``tokprof profile``
shows), each run with a fresh model so that no tokenized text is remembered from an earlier run.
tokprof runs first, so the peak RSS printed after it is tokprof's (with the log and the model loaded);
the reference runs after it.

Usage:
  python benchmarks/bench_reference.py [LOG] [--model qwen2.5]
  python benchmarks/bench_reference.py --calls 331 [--result-size 720] [--tools 16] [--seed 7]
      (no LOG: a session from benchmarks/generate_session.py, written to a temporary file)
  --no-reference: tokprof and the limit only (the reference renders every prefix of every call: it
      takes about 8 minutes at 331 calls, and grows with the cube of the session's length)
Exit status 1 when the buckets disagree.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate_session import session  # noqa: E402
from reference import Reference  # noqa: E402

from tokprof.analyses.tools import tools_report  # noqa: E402
from tokprof.attribution.buckets import BUCKETS, WARNINGS  # noqa: E402
from tokprof.formats import read_trace  # noqa: E402
from tokprof.models import resolve_model  # noqa: E402
from tokprof.profiling import profile_trace  # noqa: E402


def rss_mb() -> float:
    """The current resident set size, in MB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        if names:
            cpu = names[0]
    except OSError:
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{os.cpu_count()} cores ({cpu}), {memory:.0f} GiB, {platform.machine()}, "
        f"{platform.python_implementation()} {platform.python_version()}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", nargs="?")
    parser.add_argument("--model", default="qwen2.5")
    parser.add_argument("--calls", type=int, default=331)
    parser.add_argument("--result-size", type=int, default=720)
    parser.add_argument("--tools", type=int, default=16)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--no-reference",
        action="store_true",
        help="time tokprof and the limit only (for sessions too long for the reference)",
    )
    args = parser.parse_args()

    if args.log:
        path, name = args.log, Path(args.log).name
    else:
        import json

        doc = session(args.calls, args.result_size, args.tools, args.seed)
        handle = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8")
        with handle:
            json.dump(doc, handle, ensure_ascii=False)
        path = handle.name
        name = f"generated ({args.calls} calls, results ~{args.result_size} chars, {args.tools} tools)"
    log_mb = os.path.getsize(path) / 2**20

    start = time.perf_counter()
    model = resolve_model(args.model)
    load = time.perf_counter() - start
    trace = read_trace(path)
    if not model.exact or trace.unrecorded:
        print("the agreement check needs an exact model and a log that records its prompts", file=sys.stderr)
        return 2
    print(f"machine: {machine()}")
    print(f"log: {name}, {log_mb:.1f} MB; model {args.model} loaded in {load:.2f} s")
    baseline = rss_mb()

    # tokprof: the profile and the per-tool costs, as `tokprof profile` computes them (the model was
    # just loaded: it has tokenized nothing yet)
    start = time.perf_counter()
    profile = profile_trace(trace, model)
    summary = profile.summary()
    buckets_only = time.perf_counter() - start
    tools_report(trace, model, summary.billed_input)
    ours = time.perf_counter() - start
    peak = peak_rss_mb()

    # the limit: the final prompt rendered once and tokenized once
    model = resolve_model(args.model)
    last = trace.calls[-1]
    start = time.perf_counter()
    text = model.prompt_format.render(
        model.prompt_format.prepare(last.messages, model.prompt_format.shapes[0]), last.tools, True, last.day
    )
    model.counter.token_starts(text)
    limit = time.perf_counter() - start

    # the reference
    bad = []
    theirs = None
    if not args.no_reference:
        model = resolve_model(args.model)
        reference = Reference(model)
        start = time.perf_counter()
        expected = [reference.attribute(call) for call in trace.calls]
        theirs = time.perf_counter() - start

        # agreement, call by call
        flagged = {w["code"]: set(w["calls"]) for w in profile.warnings if w["code"] in WARNINGS}
        for call, row, want in zip(trace.calls, profile.calls, expected):
            got = {b: row.buckets[b] - call.unrendered.get(b, 0) for b in BUCKETS}
            warned = {code for code, calls in flagged.items() if call.index in calls}
            if got != want.as_dict() or warned != set(want.warnings):
                bad.append((call.index, got, want.as_dict(), sorted(warned), sorted(want.warnings)))
        if len(profile.calls) != len(expected):
            bad.append(("calls", len(profile.calls), len(expected)))
        print(f"agreement: {len(expected) - len(bad)}/{len(expected)} calls have the same buckets and warnings")
        for item in bad[:5]:
            print("  differs:", item)
    print(f"tokprof time: {ours:.2f} s ({buckets_only:.2f} s buckets, {ours - buckets_only:.2f} s per-tool costs)")
    if theirs is not None:
        spent = ", ".join(f"{k} {v:.1f} s" for k, v in sorted(reference.timings.items(), key=lambda kv: -kv[1]))
        print(f"reference time: {theirs:.1f} s ({spent})")
    print(f"peak RSS: {peak:.0f} MB ({baseline:.0f} MB with the model and log loaded, before profiling)")
    print()
    print(
        "| log | calls | final prompt | billed input | reference (s) | tokprof (s) | ratio | limit (s) "
        "| tokprof / limit | peak RSS (MB) | added by profiling (MB) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    reference_time, ratio = ("-", "-") if theirs is None else (f"{theirs:.1f}", f"{theirs / ours:.0f}x")
    print(
        f"| {name} | {summary.calls} | {summary.final_prompt:,} | {summary.billed_input:,} | "
        f"{reference_time} | {ours:.2f} | {ratio} | {limit:.2f} | {ours / limit:.1f}x | {peak:.0f} | "
        f"{peak - baseline:.0f} |"
    )
    if not args.log:
        os.unlink(path)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
