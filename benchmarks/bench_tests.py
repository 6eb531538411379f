"""The test suite's CPU, group by group: what the README's test command costs, and where.

Runs ``pytest`` over groups of test files one after another (never the whole suite in one go on a shared
machine), each group in a process of its own, and prints each group's CPU (user + system, its children
included: servers, browsers, subprocesses) and the total, as Markdown rows. The groups share one cache
of converted tokenizers, as the tests of one ``pytest`` run do. ``--without-corpus`` runs a copy of the
tree in a temporary folder, where ``../shared/corpus`` is not (as on CI); the copy is removed afterwards.
The total is a little more than one ``pytest`` run costs: each group starts Python and collects its
files again (``pytest --co -q`` of the whole suite costs about 13 s).

    python benchmarks/bench_tests.py [--without-corpus] [--groups a,b,format_c] [--durations 5] [--cache DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def groups(tests: Path) -> dict[str, list[str]]:
    """The test files by the first letter of their name; the many ``test_format_*`` files by the first
    letter of the format."""
    out: dict[str, list[str]] = {}
    for path in sorted(tests.glob("test_*.py")):
        name = path.name[len("test_") :]
        key = "format_" + name[len("format_")] if name.startswith("format_") else name[0]
        out.setdefault(key, []).append(str(path.relative_to(tests.parent)))
    return out


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_group(root: Path, files: list[str], cache: Path, durations: int) -> tuple[float, float, str]:
    """One group's CPU and wall seconds, and pytest's last line."""
    env = {**os.environ, "PYTHONPATH": str(root), "TOKPROF_CACHE_DIR": str(cache)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--durations={durations}", *files]
    before, started = cpu_of_children(), time.monotonic()
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
    cpu, wall = cpu_of_children() - before, time.monotonic() - started
    lines = done.stdout.strip().splitlines()
    slowest = [line for line in lines if line.split("s ", 1)[0].replace(".", "").isdigit()][:durations]
    for line in slowest:
        print(f"    {line}", file=sys.stderr)
    return cpu, wall, lines[-1] if lines else done.stderr.strip()[-200:]


def copy_tree(to: Path) -> Path:
    """The tree without .git and .venv, in ``to`` (no ``../shared/corpus`` beside it)."""
    target = to / "repo"
    shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__"), symlinks=True)
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--without-corpus", action="store_true", help="run a copy of the tree with no corpus beside it")
    parser.add_argument("--groups", default="", help="comma-separated group names (default: every group)")
    parser.add_argument("--durations", type=int, default=0, help="each group's slowest tests, on standard error")
    parser.add_argument("--cache", help="the converted tokenizers' cache (default: a new one for this run)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tokprof-bench-tests-") as scratch:
        root = copy_tree(Path(scratch)) if args.without_corpus else ROOT
        cache = Path(args.cache) if args.cache else Path(scratch) / "cache"
        found = groups(root / "tests")
        chosen = [g for g in args.groups.split(",") if g] or list(found)
        corpus = (root.parent / "shared" / "corpus").is_dir()
        print(f"| group | files | CPU s | wall s | result |  (corpus {'present' if corpus else 'absent'})")
        print("| --- | ---: | ---: | ---: | --- |")
        total_cpu = total_wall = 0.0
        for name in chosen:
            cpu, wall, last = run_group(root, found[name], cache, args.durations)
            total_cpu, total_wall = total_cpu + cpu, total_wall + wall
            print(f"| {name} | {len(found[name])} | {cpu:.1f} | {wall:.1f} | {last} |", flush=True)
        print(f"| total | {sum(len(found[n]) for n in chosen)} | {total_cpu:.1f} | {total_wall:.1f} | |")


if __name__ == "__main__":
    main()
