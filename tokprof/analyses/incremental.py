"""Incremental directory runs: a state file beside the output remembers each input (size,
modification time, content hash, provider request ids, and what profiling it gave), so that a rerun
over a folder that grew profiles only the files that are new or changed.

A file's outcome is reused when its content is the same (the hash; size and modification time only
spare reading it), the run's options and the tokprof and genai-prices versions are the same, and the request ids earlier files hold (the calls
it leaves out, counted there) are the same: so calls resumed into a new session file are still
counted once, and the output is the same as a full run's.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from tokprof.analyses.calls import SCHEMA_VERSION, CallRecord
from tokprof.analyses.sessions import SessionRow, SessionsReport, Skipped
from tokprof.analyses.directory import (
    Mapper,
    Outcome,
    SessionOptions,
    SessionOutcome,
    SessionTask,
    SessionWork,
    copies,
    profile_session,
    request_ids,
    sessions_report,
)
from tokprof.base.errors import TokprofError
from tokprof.models.base import ModelInfo
from tokprof.version import __version__

STATE_NAME = ".tokprof-state.json"
STATE_VERSION = 1


@dataclass(frozen=True)
class Stats:
    files: int
    profiled: int  # files profiled in this run (new, changed, or whose earlier files changed)


def _hash(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def options_key(options: SessionOptions) -> str:
    """What the run's options and code are, as a hash: another model, prices or stamp, another tokprof
    or genai-prices (other counting, other rates) profiles every file again."""
    from tokprof.pricing.cost import genai_version

    code = f"tokprof {__version__}, genai-prices {genai_version()}"
    return hashlib.sha256(f"{options!r} {code}".encode()).hexdigest()


def load_state(path: str) -> dict:
    """The state file's entries by input path (empty when there is none)."""
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        raise TokprofError(f"{path}: cannot read the state file: {exc}") from None
    if not isinstance(doc, dict) or doc.get("version") != STATE_VERSION or doc.get("schema") != SCHEMA_VERSION:
        return {}  # another version: a full run
    files = doc.get("files")
    return files if isinstance(files, dict) else {}


def run_incremental(
    tasks: Sequence[SessionTask], options: SessionOptions, map_: Mapper, root: str, state: dict
) -> tuple[SessionsReport, dict, Stats]:
    """A directory run that reuses the state's outcomes where they hold; the report, the new state."""
    key = options_key(options)
    entries = []
    for task in tasks:
        stat = os.stat(task.path)
        old = state.get(task.path) if isinstance(state.get(task.path), dict) else None
        same_stat = old is not None and old.get("size") == stat.st_size and old.get("mtime_ns") == stat.st_mtime_ns
        digest = old["sha256"] if same_stat and old else _hash(task.path)
        fresh = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}
        usable = old is not None and old.get("sha256") == digest and _ids_ok(old.get("request_ids"))
        entries.append((task, old if usable else None, fresh))
    need_ids = [task for task, old, _ in entries if old is None]
    found = dict(zip([t.path for t in need_ids], map_(request_ids, need_ids)))
    ids = [found[task.path] if old is None else old.get("request_ids") for task, old, _ in entries]
    counted = copies(ids)
    todo, outcomes, kept = [], {}, {}
    for (task, old, _), dropped in zip(entries, counted):
        reused, remembered = None, None
        if old is not None and old.get("options") == key and sorted(dropped) == old.get("counted"):
            remembered = old.get("outcome")
            reused = _outcome(remembered)
        if reused is not None:
            outcomes[task.path] = reused
            kept[task.path] = remembered  # checked by _outcome: written again as it was read
        else:
            todo.append(SessionWork(task, options, dropped))
    for work, outcome in zip(todo, map_(profile_session, todo)):
        outcomes[work.task.path] = outcome
    report = sessions_report(root, tasks, [outcomes[t.path] for t in tasks])
    new_state = {
        task.path: dict(
            fresh,
            request_ids=found_ids,
            counted=sorted(dropped),
            options=key,
            outcome=kept[task.path] if task.path in kept else _encoded(outcomes[task.path]),
        )
        for (task, _, fresh), found_ids, dropped in zip(entries, ids, counted)
    }
    return report, new_state, Stats(len(tasks), len(todo))


def state_bytes(state: dict) -> bytes:
    doc = {"version": STATE_VERSION, "schema": SCHEMA_VERSION, "files": state}
    return (json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


def _encoded(outcome: Outcome) -> dict:
    if isinstance(outcome, Skipped):
        return {"skipped": dataclasses.asdict(outcome)}
    return {
        "row": dataclasses.asdict(outcome.row),
        "model": outcome.model.to_dict(),
        "calls": [record.to_dict() for record in outcome.calls],
    }


def _ids_ok(ids: object) -> bool:
    return ids is None or (isinstance(ids, list) and all(isinstance(i, str) for i in ids))


def _outcome(d: object) -> Outcome | None:
    """A remembered outcome, or None when the state file's entry is not one (that file is profiled again)."""
    try:
        return _decoded(d)  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _decoded(d: dict) -> Outcome:
    if "skipped" in d:
        return _typed(Skipped, d["skipped"])
    calls = []
    for record in d["calls"]:
        when = record.get("time")
        calls.append(_typed(CallRecord, dict(record, time=None if when is None else datetime.fromisoformat(when))))
    return SessionOutcome(_typed(SessionRow, d["row"]), ModelInfo.from_dict(d["model"]), tuple(calls))


_T = TypeVar("_T")


def _typed(cls: type[_T], values: dict) -> _T:
    """A dataclass from a state file's fields, each of its declared type (ValueError if not: a damaged
    state file, whose entry is profiled again, not rendered)."""
    checks = _checks(cls)  # type: ignore[arg-type]  # a class is hashable
    for name, value in values.items():
        check = checks.get(name)
        if check is not None and not check(value):
            raise ValueError(f"{cls.__name__}.{name}")
    return cls(**values)


@functools.cache
def _checks(cls: type) -> dict[str, Callable[[object], bool]]:
    """A check per field of a dataclass, made once per class from its resolved field types (resolving
    them per entry was 78% of an unchanged re-run)."""
    return {name: _check(hint) for name, hint in typing.get_type_hints(cls).items()}


def _check(hint: Any) -> Callable[[object], bool]:
    """Whether a value read from JSON is of type ``hint``."""
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        plain = {type(None) if arg is type(None) else arg for arg in args}
        if plain <= {type(None), bool, int, str}:  # JSON's own types: one look at the value's type
            return lambda value: type(value) in plain
        options = [_check(arg) for arg in args]
        return lambda value: any(check(value) for check in options)
    if hint is type(None):
        return lambda value: value is None
    if hint is bool:
        return lambda value: isinstance(value, bool)
    if hint is int:
        return lambda value: isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return lambda value: isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if origin is dict:
        keys, values = _check(args[0]), _check(args[1])
        return lambda value: isinstance(value, dict) and all(keys(k) and values(v) for k, v in value.items())
    if origin in (list, tuple):
        items = _check(args[0])
        return lambda value: isinstance(value, (list, tuple)) and all(items(v) for v in value)
    if isinstance(hint, type):
        return lambda value: isinstance(value, hint)
    return lambda value: True
