"""Every command's output on the sample and the corpus, written to a folder, so that two commits can
be compared byte for byte (a refactor changes none of them)::

    python benchmarks/snapshot_outputs.py /tmp/before      # at the old commit
    python benchmarks/snapshot_outputs.py /tmp/after       # at the new one
    diff -r /tmp/before /tmp/after

The corpus (``../shared/corpus``) is used when present. Outputs are at 100 columns, without colour.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tokprof.frontends.cli import main  # noqa: E402

SAMPLE = ROOT / "samples" / "incident_session.json"
CORPUS = ROOT.parent / "shared" / "corpus"
LOGS = [
    SAMPLE,
    *(
        CORPUS / name
        for name in (
            "claude_code_medium_full-session-four.jsonl",
            "claude_code_2.1_compacted/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
            "codex_rollout-2025-09-25T09-49-46-01998190-fba6-7f40-9309-dc4e48c5844a.jsonl",
            "codex_0.58_rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl",
            "inspect_eval_browser_2025-05-12T20-27-36-04-00.json",
            "swe_agent_v0_gpt4_pydicom__pydicom-1458.traj",
        )
    ),
]
COMMANDS = [
    ("profile", ["profile", "{log}", "--calls", "all"]),
    ("profile.json", ["profile", "{log}", "-f", "json"]),
    ("profile.csv", ["profile", "{log}", "-f", "csv"]),
    ("tools", ["tools", "{log}"]),
    ("tools.json", ["tools", "{log}", "-f", "json"]),
    ("whatif", ["whatif", "{log}", "--no-progress"]),
    ("whatif.json", ["whatif", "{log}", "-f", "json", "--no-progress"]),
    ("check.json", ["check", "{log}", "--config", "samples/tokprof.toml", "-f", "json"]),
]


def run(argv: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return f"exit {code}\n--- stdout\n{out.getvalue()}--- stderr\n{err.getvalue()}"


def snapshot(folder: Path) -> int:
    os.environ["COLUMNS"] = "100"
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for log in LOGS:
        if not log.exists():
            continue
        for name, argv in COMMANDS:
            text = run([a.replace("{log}", os.path.relpath(log, ROOT)) for a in argv])
            (folder / f"{log.stem}.{name}.txt").write_text(text, encoding="utf-8")
            written += 1
    return written


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    os.chdir(ROOT)
    print(f"{snapshot(Path(sys.argv[1]))} outputs written to {sys.argv[1]}")
