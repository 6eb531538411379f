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
sys.path.insert(0, str(ROOT))

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    args = parser.parse_args()
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
