"""Time `tokprof whatif` with the default policy set against one profile of the same log, in-process.

The limit (issue #16): the default policies (full, window, elide, cap:4000, user-verbatim:4,
compact:80) take at most 8 times one profile of the log, on the 331-call benchmark session of
generate_session.py. Both are timed with a freshly loaded model (no tokenizer segments cached from
an earlier run), the profile as `profile_trace`, the what-if as `tokprof.analyses.whatif.whatif`
(one `profile_trace` per policy, `full` among them, and the policies' transforms).

Usage: python benchmarks/bench_whatif.py [LOG | --calls 331] [--model qwen2.5] [--repeat 3] [--policy P ...]
Prints a Markdown table: per run the profile's time, the policy set's and their ratio against the limit,
then the best of the runs (the least time of each: the machine's cores are shared with other work), and
each policy's billed input. Exit status 1 when the best ratio is over the limit.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate_session import session  # noqa: E402

from tokprof.analyses.whatif import whatif  # noqa: E402
from tokprof.formats import read_trace  # noqa: E402
from tokprof.models import resolve_model  # noqa: E402
from tokprof.profiling import profile_trace  # noqa: E402
from tokprof.transforms.policies import DEFAULT_POLICIES, parse_policies  # noqa: E402

LIMIT = 8.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", nargs="?", help="a log (default: a session from generate_session.py)")
    parser.add_argument("--calls", type=int, default=331, help="calls of the generated session")
    parser.add_argument("--model", default="qwen2.5")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--policy", action="append", help="a policy (default: the default set)")
    args = parser.parse_args()

    if args.log:
        path, name = args.log, Path(args.log).name
    else:
        folder = tempfile.mkdtemp(prefix="tokprof-bench-")
        path = str(Path(folder) / f"session-{args.calls}.json")
        Path(path).write_text(json.dumps(session(args.calls, 720, 16, 7)) + "\n", encoding="utf-8")
        name = f"generated, {args.calls} calls"
    trace = read_trace(path)
    policies = parse_policies(args.policy or list(DEFAULT_POLICIES))
    print(
        f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}; "
        f"policies: {', '.join(p.spec for p in policies)}"
    )
    print("| log | calls | billed input (full) | profile (s) | policy set (s) | ratio | limit | ratio / limit |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    profiles: list[float] = []
    sets: list[float] = []
    per_policy: list[tuple[str, int, int]] = []
    for _ in range(args.repeat):
        model = resolve_model(args.model)  # fresh: no tokenizer segments cached from the last run
        start = time.perf_counter()
        profile = profile_trace(trace, model)
        profiled = time.perf_counter() - start
        model = resolve_model(args.model)
        start = time.perf_counter()
        report = whatif(trace, model, policies)
        replayed = time.perf_counter() - start
        ratio = replayed / profiled
        profiles.append(profiled)
        sets.append(replayed)
        billed = profile.summary().billed_input
        per_policy = [(r.policy, r.billed_input, r.saving) for r in report.policies]
        print(
            f"| {name} | {len(trace.calls)} | {billed:,} | {profiled:.2f} | {replayed:.2f} | {ratio:.1f}x | "
            f"{LIMIT:g}x | {ratio / LIMIT:.2f} |"
        )
    best = min(sets) / min(profiles)  # each at its least disturbed (the machine's cores are shared)
    print(
        f"| best of {args.repeat} | {len(trace.calls)} | {billed:,} | {min(profiles):.2f} | {min(sets):.2f} | "
        f"{best:.1f}x | {LIMIT:g}x | {best / LIMIT:.2f} |"
    )
    print()
    print("| policy | billed input | saving |")
    print("| --- | ---: | ---: |")
    for spec, billed, saving in per_policy:
        print(f"| {spec} | {billed:,} | {saving:,} |")
    return 1 if best > LIMIT else 0


if __name__ == "__main__":
    raise SystemExit(main())
