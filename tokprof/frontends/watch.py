"""``tokprof watch``: follow the sessions being written and show each one's newest call.

Paths are files or folders; with none, the agents' own folders: Claude Code's
``$CLAUDE_CONFIG_DIR/projects`` (default ``~/.claude/projects``) and Codex's ``$CODEX_HOME/sessions``
(default ``~/.codex/sessions``). Folders are searched again every few seconds for new sessions
(``*.jsonl``, subagent folders left out); a file is followed by its identity, so a session moved
to another name keeps its state.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokprof.live import LiveCall, LiveSession

RESCAN = 2.0  # seconds between searches of the folders


def default_paths() -> list[str]:
    home = Path.home()
    claude = Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude") / "projects"
    codex = Path(os.environ.get("CODEX_HOME") or home / ".codex") / "sessions"
    return [str(claude), str(codex)]


def check_paths(paths: list[str]) -> None:
    """A path given that does not exist is an error (one line, exit 2), not a wait without end."""
    from tokprof.base.errors import TokprofError
    from tokprof.base.text import visible

    for given in paths:
        if not os.path.exists(given):
            raise TokprofError(f"{visible(given)}: no such file or folder")


def waiting_for(paths: list[str]) -> str:
    """What a watch with nothing to follow yet waits for."""
    from tokprof.base.text import home_shown, visible

    where = ", ".join(visible(home_shown(p)) + ("" if os.path.exists(p) else " (not there yet)") for p in paths)
    return f"waiting for a session to be written: a *.jsonl file under {where}"


def session_files(paths: list[str]) -> list[str]:
    found: list[str] = []
    for given in paths:
        p = Path(given)
        if p.is_file():
            found.append(str(p))
        elif p.is_dir():
            found += sorted(str(f) for f in p.rglob("*.jsonl") if f.is_file() and "subagents" not in f.parts)
    return found


class Watcher:
    """The sessions under some paths, each a :class:`LiveSession` keyed by file identity."""

    def __init__(self, paths: list[str], thresholds: tuple[float, ...], model: str | None = None):
        self.paths = paths
        self.thresholds = thresholds
        self.model = model
        self.sessions: dict[tuple[int, int], LiveSession] = {}
        self.scanned = 0.0

    def scan(self) -> None:
        for path in session_files(self.paths):
            try:
                st = os.stat(path)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            known = self.sessions.get(key)
            if known is None:
                from tokprof.live import LiveSession

                self.sessions[key] = LiveSession(path, thresholds=self.thresholds, model=self.model)
            elif known.follower.path != path and not os.path.exists(known.follower.path):
                known.follower.moved_to(path)  # the same file under a new name
        self.scanned = time.monotonic()

    def poll(self) -> list[LiveCall]:
        if time.monotonic() - self.scanned >= RESCAN:
            self.scan()
        new: list[LiveCall] = []
        for _key, live in list(self.sessions.items()):
            if not os.path.exists(live.follower.path):
                continue  # moved or deleted: kept until it shows up again
            new += live.update()
        return new


def run_threshold_command(command: str, call: LiveCall) -> None:
    """Run ``command`` (split like a shell would, never through one) with the figures in TOKPROF_*."""
    import shlex

    env = dict(os.environ)
    env.update(
        {
            "TOKPROF_SESSION": call.session or "",
            "TOKPROF_PATH": call.path,
            "TOKPROF_CALL": str(call.call),
            "TOKPROF_MODEL": call.model or "",
            "TOKPROF_PROMPT": str(call.prompt),
            "TOKPROF_WINDOW": str(call.window or ""),
            "TOKPROF_TO_COMPACT": "" if call.to_compact is None else str(call.to_compact),
            "TOKPROF_FILL": "" if call.fill is None else f"{call.fill:.4f}",
            "TOKPROF_THRESHOLD": f"{max(call.crossed):g}",
            "TOKPROF_CROSSED": ",".join(f"{t:g}" for t in call.crossed),
            "TOKPROF_COST": "" if call.cost is None else f"{call.cost:.6f}",
            "TOKPROF_CACHE_READ_SHARE": "" if call.cache_read_share is None else f"{call.cache_read_share:.4f}",
        }
    )
    for name, value in (call.buckets or {}).items():
        env[f"TOKPROF_{name.upper()}"] = str(value)
    try:
        subprocess.run(shlex.split(command), env=env, check=False, timeout=60)
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        print(f"tokprof: --on-threshold: {exc}", file=sys.stderr)


def tokens(n: int | None) -> str:
    if n is None:
        return "-"
    return f"{n / 1000:.0f}k" if abs(n) >= 10_000 else f"{n / 1000:.1f}k" if abs(n) >= 1000 else str(n)


#: What the buckets column is, under the table (the profile's split of the same call differs).
BUCKETS_NOTE = (
    "buckets: the newest prompt counted alone and anchored on its reported size (scaled down to it, or "
    "the rest in unrecorded); ~ marks an estimate, counted with a stand-in tokenizer. tokprof profile "
    "takes each call as the one before plus what it adds, so its split of the same call differs."
)


def to_compact(call: LiveCall) -> str:
    """A second line for the ctx cell: the tokens left before the agent compacts the conversation by
    itself (Claude Code); nothing for other agents."""
    if call.to_compact is None:
        return ""
    return f"\n{tokens(call.to_compact)} to compact" if call.to_compact > 0 else "\ncompact due"


def bucket_cells(call: LiveCall) -> str:
    """The newest prompt's buckets, each by its own name (tools and results apart), ``~`` on an estimate."""
    from tokprof.frontends.statusline import LABELS

    mark = "~" if call.estimate else ""
    return "\n".join(f"{LABELS.get(k, k)} {mark}{tokens(v)}" for k, v in (call.buckets or {}).items() if v) or "-"


def table(watcher: Watcher):
    from rich.table import Table
    from rich.text import Text

    from tokprof.base.text import visible

    grid = Table(title="tokprof watch", box=None, padding=(0, 1, 0, 0), header_style="bold", caption_justify="left")
    # a cell wraps at a narrow width, at its spaces, never cut short (a file name folds)
    for name, widest in (
        ("session", 24),
        ("calls", None),
        ("ctx", None),
        ("buckets (last prompt)", None),
        ("added", None),
        ("largest result", 12),
        ("cost", None),
        ("cache", None),
    ):
        grid.add_column(name, overflow="fold", max_width=widest)
    shown = counted = 0
    for live in watcher.sessions.values():
        last = live.last
        if last is None:
            continue
        shown += 1
        counted += last.buckets is not None
        fill = "-" if last.fill is None else f"{last.fill:.0%}"
        style = "red" if len(last.past) >= 2 else "yellow" if last.past else ""
        result = (
            f"{visible(last.largest_result['tool'])} {tokens(last.largest_result['tokens'])}"
            if last.largest_result
            else "-"
        )
        past = f"\npast {max(last.past):.0%}" if last.past else ""
        grid.add_row(
            Text(visible(Path(last.path).name)),
            str(live.totals.calls),
            Text(fill + (f" of {tokens(last.window)}" if last.window else "") + past + to_compact(last), style=style),
            Text(bucket_cells(last)),
            tokens(last.added),
            Text(result),
            "unpriced" if last.cost is None else f"${last.cost:.2f}",
            Text(
                ("-" if last.cache_read_share is None else f"{last.cache_read_share:.0%}")
                + ("\nbroke" if last.cache_broke else ""),
                style="red" if last.cache_broke else "",
            ),
        )
    if counted:
        grid.caption = Text(BUCKETS_NOTE)
    if not watcher.sessions:
        grid.caption = Text(waiting_for(watcher.paths))
    elif not shown:
        grid.caption = Text(f"following {len(watcher.sessions)} session(s): waiting for a model call")
    return grid


def watch(
    paths: list[str] | None,
    *,
    thresholds: tuple[float, ...],
    as_json: bool,
    on_threshold: str | None,
    interval: float,
    model: str | None,
    out: Callable[[str], None] | None = None,
    duration: float | None = None,
) -> None:
    """Follow the sessions under ``paths`` (None or empty: the agents' own folders); a path given that
    does not exist is an error."""
    check_paths(paths or [])
    watcher = Watcher(paths or default_paths(), thresholds, model)
    watcher.scan()
    for live in watcher.sessions.values():
        live.update(count_every=False)  # the sessions as they are: only later calls are new
    if not watcher.sessions and (as_json or not sys.stdout.isatty()):
        print(f"tokprof: {waiting_for(watcher.paths)}", file=sys.stderr, flush=True)
    end = None if duration is None else time.monotonic() + duration

    def step() -> None:
        for call in watcher.poll():
            if as_json:
                print(call.to_json(), flush=True)
            if on_threshold and call.crossed:
                run_threshold_command(on_threshold, call)

    if as_json or not sys.stdout.isatty():
        while end is None or time.monotonic() < end:
            step()
            time.sleep(interval)
        return
    from rich.live import Live

    with Live(table(watcher), refresh_per_second=4, screen=False) as display:
        while end is None or time.monotonic() < end:
            step()
            display.update(table(watcher))
            time.sleep(interval)
