"""tokprof's work on the logs people have, against two limits, in one process.

For each log class:

* **work**: ``profile_trace`` (every call attributed; the model loaded beforehand);
* **L1**: one render of the largest prompt plus one tokenization of it;
* **L2**: rendering every call's prompt once, plus tokenizing only what each call adds to the
  previous call of its thread (the text after their common prefix);
* **L3**: every distinct message rendered once on its own and its render tokenized once (and the
  tool catalogue once per thread);
* **agreement**: the buckets, call by call, equal those of the same engine counting with the
  Hugging Face tokenizer converted from the same vocabulary (tokprof's counter before the fast one).

Times are CPU seconds (``time.process_time``), medians of ``--repeat`` runs. Printed as a Markdown
table with the ratios to the limits (issue #17: every class within 3x of L2; the generated session
also within 3x of L1; issue #32: every class within 10x of L3), whether incremental rendering
(:mod:`tokprof.attribution.splice`) gives the same buckets as rendering every prompt whole, then the growth
check of issue #32: 3,000 calls of the generated shape in at most 12x the work of 300.

Usage: python benchmarks/bench_logs.py [--repeat 3] [--corpus ../shared/corpus]
       python benchmarks/bench_logs.py --growth [--repeat 3] [--rounds 3] [--against DIR]

``--growth`` measures only the growth, in ``--rounds`` fresh processes; with ``--against DIR``
(another checkout's root) a process of each tree in turn, so that both see the same load, and
prints each round's figures and both trees' medians.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The tree measured: this one, or the one ``--growth-tree`` names (for ``--against``'s runs).
TREE = Path(sys.argv[sys.argv.index("--growth-tree") + 1]) if "--growth-tree" in sys.argv else ROOT
sys.path.insert(0, str(TREE))

from tokprof.formats import read_trace  # noqa: E402
from tokprof.models import resolve_model  # noqa: E402
from tokprof.models.base import ChatModel  # noqa: E402
from tokprof.models.counters import HFCounter  # noqa: E402
from tokprof.profiling import profile_trace  # noqa: E402
from tokprof.base.textdiff import common_prefix  # noqa: E402
from tokprof.trace import Trace  # noqa: E402


def cpu(function, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        function()
        times.append(time.process_time() - start)
    return statistics.median(times)


def render(model: ChatModel, call) -> str:
    fmt = model.prompt_format
    return fmt.render(fmt.prepare(call.messages, fmt.shapes[0]), call.tools, True, call.day)


def limits(trace: Trace, model: ChatModel, repeat: int) -> tuple[float, float]:
    largest = max(trace.calls, key=lambda c: len(render(model, c)))

    def one() -> None:
        model.counter.token_starts(render(model, largest))

    def every() -> None:
        last: dict[str, str] = {}
        for call in trace.calls:
            text = render(model, call)
            before = last.get(call.thread, "")
            model.counter.count(text[common_prefix(before, text) :])
            last[call.thread] = text

    return cpu(one, repeat), cpu(every, repeat)


def limit_l3(trace: Trace, model: ChatModel, repeat: int) -> float:
    """Every distinct message rendered once on its own and tokenized once; tools once per thread."""
    fmt = model.prompt_format

    def once() -> None:
        seen: set[int] = set()
        tools: set[tuple] = set()
        for call in trace.calls:
            if call.tools and (call.thread, id(call.tools)) not in tools:
                tools.add((call.thread, id(call.tools)))
                model.counter.count(json.dumps(call.tools))
            for message in call.messages:
                if id(message) in seen:
                    continue
                seen.add(id(message))
                try:
                    text = fmt.render(fmt.prepare([message], fmt.shapes[0]), None, False, call.day)
                except Exception:  # noqa: BLE001 - a template that renders no lone message: its content
                    text = str(message.get("content") or "")
                model.counter.count(text)

    return cpu(once, repeat)


def whole(trace: Trace, model: ChatModel):
    """The profile with incremental rendering off (every prompt rendered whole)."""
    from tokprof.attribution.attributor import Attributor

    return profile_trace(trace, model, attributor=Attributor(model, keep_json=True, incremental=False))


def converted(model: ChatModel) -> ChatModel:
    """The same model counting with the converted Hugging Face tokenizer."""
    import dataclasses

    return dataclasses.replace(model, counter=HFCounter(model.counter.fallback.tokenizer, "converted"))


def generated(calls: int, folder: Path) -> Path:
    path = folder / f"generated-{calls}.json"
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "generate_session.py"), "--calls", str(calls), "-o", str(path)],
        check=True,
    )
    return path


def growth_times(folder: Path, repeat: int) -> dict[int, float]:
    """CPU seconds of ``profile_trace`` on 300 and 3,000 generated calls, medians of ``repeat``."""
    model = resolve_model("qwen2.5")
    times = {}
    for calls in (300, 3000):
        path = folder / f"generated-{calls}.json"
        if not path.is_file():
            generated(calls, folder)
        trace = read_trace(str(path))
        profile_trace(trace, model)  # warm: the model's caches, the template compiled
        times[calls] = cpu(lambda: profile_trace(trace, model), repeat)
    return times


def growth(repeat: int, rounds: int, against: str | None) -> None:
    """The growth in fresh processes, alternating trees with ``against``."""
    trees = [ROOT] + ([Path(against).resolve()] if against else [])
    found: dict[Path, list[dict[str, float]]] = {tree: [] for tree in trees}
    with tempfile.TemporaryDirectory() as tmp:
        generated(300, Path(tmp))
        generated(3000, Path(tmp))
        print(f"Machine: {platform.machine()}, Python {platform.python_version()}; CPU seconds, median of {repeat}\n")
        print("| round | tree | 300 calls | 3,000 calls | 3,000 / 300 |")
        print("| --- | --- | ---: | ---: | ---: |")
        for i in range(rounds):
            for tree in trees:
                command = [sys.executable, __file__, "--growth-worker", tmp, "--repeat", str(repeat)]
                out = subprocess.run(command + ["--growth-tree", str(tree)], check=True, capture_output=True, text=True)
                times = json.loads(out.stdout.strip().splitlines()[-1])
                found[tree].append(times)
                print(
                    f"| {i + 1} | {tree} | {times['300']:.3f} s | {times['3000']:.3f} s | {times['3000'] / times['300']:.1f}x |"
                )
        for tree, runs in found.items():
            small = statistics.median(r["300"] for r in runs)
            large = statistics.median(r["3000"] for r in runs)
            ratios = sorted(r["3000"] / r["300"] for r in runs)
            print(
                f"\n{tree}: 300 calls {small:.3f} s, 3,000 calls {large:.3f} s (medians), ratios "
                + ", ".join(f"{r:.1f}x" for r in ratios)
                + f"; median ratio {statistics.median(ratios):.1f}x (limit 12x)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    parser.add_argument("--growth", action="store_true", help="only the growth, 3,000 calls against 300")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", metavar="DIR", help="with --growth: another checkout's root, alternately")
    parser.add_argument("--growth-worker", metavar="FOLDER", help=argparse.SUPPRESS)
    parser.add_argument("--growth-tree", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.growth_worker:
        print(json.dumps(growth_times(Path(args.growth_worker), args.repeat)))
        return
    if args.growth:
        growth(args.repeat, args.rounds, args.against)
        return
    corpus = Path(args.corpus)
    with tempfile.TemporaryDirectory() as tmp:
        logs = [
            ("generated, 300 calls", generated(300, Path(tmp)), "qwen2.5"),
            ("the sample (incident_session.json)", ROOT / "samples" / "incident_session.json", "qwen2.5"),
        ]
        for name, relative, model in (
            (
                "Claude Code 2.1, 157 calls",
                "claude_code_2.1_compacted/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
                "claude-proxy",
            ),
            (
                "Codex 0.40, 85 calls",
                "codex_rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl",
                "openai-proxy",
            ),
            ("SWE-agent 0.x, 12 calls", "swe_agent_v0_gpt4_pydicom__pydicom-1458.traj", "openai-proxy"),
        ):
            if (corpus / relative).is_file():
                logs.append((name, corpus / relative, model))
        print(
            f"Machine: {platform.machine()}, Python {platform.python_version()}; CPU seconds, median of {args.repeat}\n"
        )
        print("| log | model | work | L1 | L2 | L3 | work / L1 | work / L2 | work / L3 | agrees | same whole |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
        for name, path, model_name in logs:
            model = resolve_model(model_name)
            trace = read_trace(str(path))
            work = cpu(lambda: profile_trace(trace, model), args.repeat)
            l1, l2 = limits(trace, model, args.repeat)
            l3 = limit_l3(trace, model, args.repeat)
            fast = profile_trace(trace, model)
            slow = profile_trace(trace, converted(model))
            agrees = all(a.buckets == b.buckets for a, b in zip(fast.calls, slow.calls))
            same = fast.to_dict() == whole(trace, model).to_dict()
            print(
                f"| {name} | {model_name} | {work:.2f} s | {l1:.2f} s | {l2:.2f} s | {l3:.2f} s | {work / l1:.1f}x | "
                f"{work / l2:.1f}x | {work / l3:.1f}x | {'yes' if agrees else 'NO'} | {'yes' if same else 'NO'} |"
            )
        model = resolve_model("qwen2.5")
        times, third = {}, {}
        for calls in (300, 3000):
            trace = read_trace(str(generated(calls, Path(tmp))))
            times[calls] = cpu(lambda: profile_trace(trace, model), args.repeat)
            third[calls] = limit_l3(trace, model, 1)
        print(
            f"\nGrowth: 300 calls {times[300]:.2f} s, 3,000 calls {times[3000]:.2f} s: "
            f"{times[3000] / times[300]:.1f}x (limit 12x); work / L3 {times[300] / third[300]:.1f}x and "
            f"{times[3000] / third[3000]:.1f}x"
        )


if __name__ == "__main__":
    main()
