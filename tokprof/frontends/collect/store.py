"""Where the collector's rows go: Parquet files under a folder or a URL prefix (``s3://``, through
fsspec), partitioned ``day=YYYY-MM-DD/agent=NAME/`` and named ``<collector>-<batch>.parquet`` so that
several collectors write one prefix without touching each other's files.

Rows are held until a batch is due (``max_rows`` rows, or ``max_seconds`` after its first row), then
written: every partition's file, then the batch's keys (``_tokprof/ids/<collector>-<batch>.ids``),
which is how a restarted collector, or another one, knows the spans and events already written
(an exporter retries what it is not sure was taken). A key already written or held is dropped.

A destination that cannot be written (a full disk, S3 unreachable) leaves the batch's files in a
local spool folder, bounded (``spool_bytes``), and says so; each later flush first moves the spool
to the destination. When the spool is full the collector stops taking rows (:attr:`Store.full`: the
receiver answers 503, so that exporters keep their data and retry).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IDS = "_tokprof/ids"
KEYS_KEPT = 500_000  # keys remembered for dedupe (the newest: about 80 MB)
#: A batch's rows as files (relative path, bytes) named after the batch (``Telemetry.files``).
Files = Callable[[list[dict[str, Any]], str], list[tuple[str, bytes]]]


@dataclass(frozen=True)
class StoreOptions:
    destination: str
    collector: str
    max_rows: int = 10_000
    max_seconds: float = 60.0
    spool: str = ".tokprof-spool"
    spool_bytes: int = 512 * 1024 * 1024


class Destination:
    """A folder or a URL prefix, written file by file (a local file appears whole: written aside, renamed)."""

    def __init__(self, root: str) -> None:
        self.url = "://" in root
        self.root = root.rstrip("/")
        self.fs: Any = None
        if self.url:
            import fsspec

            self.fs, self.base = fsspec.core.url_to_fs(self.root)

    def path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def write(self, name: str, data: bytes) -> None:
        if self.url:
            with self.fs.open(f"{self.base}/{name}", "wb") as out:
                out.write(data)
            return
        target = Path(self.root) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        aside = target.with_name(f".{target.name}.partial")
        aside.write_bytes(data)
        os.replace(aside, target)

    def names(self, folder: str) -> list[str]:
        """The file names in a folder of the destination (none when it does not exist)."""
        if self.url:
            try:
                return sorted(p.rsplit("/", 1)[-1] for p in self.fs.ls(f"{self.base}/{folder}", detail=False))
            except FileNotFoundError:
                return []
        where = Path(self.root) / folder
        return sorted(p.name for p in where.iterdir() if p.is_file()) if where.is_dir() else []

    def read(self, name: str) -> bytes:
        if self.url:
            with self.fs.open(f"{self.base}/{name}", "rb") as found:
                return bytes(found.read())
        return (Path(self.root) / name).read_bytes()


class Store:
    """Holds rows, writes them in batches, remembers the keys written (see the module's docstring)."""

    def __init__(self, options: StoreOptions, files: Files, log: Callable[[str], None]) -> None:
        self.options = options
        self.make_files = files
        self.log = log
        self.destination = Destination(options.destination)
        self.spool = Path(options.spool)
        self.lock = threading.Lock()
        self.rows: list[dict[str, Any]] = []
        self.keys: list[str] = []
        self.started: float | None = None
        self.seen: OrderedDict[str, None] = OrderedDict()
        self.batch = 0
        self.written = 0
        self.full = False
        self._load()

    # -- start --------------------------------------------------------------------------------------
    def _load(self) -> None:
        """The keys every collector has written, and this collector's next batch number."""
        prefix = f"{self.options.collector}-"
        try:
            names = self.destination.names(IDS)
        except Exception as exc:  # unreachable, no permission: start, and say what that costs
            self.log(
                f"cannot read the keys written to {self.options.destination} ({type(exc).__name__}): starting "
                "without them (a span or event written before may be written again)"
            )
            names = []
        spooled = sorted(p.name for p in (self.spool / IDS).glob("*.ids")) if (self.spool / IDS).is_dir() else []
        for name in names + spooled:
            if name.startswith(prefix) and name[len(prefix) : -4].isdigit():
                self.batch = max(self.batch, int(name[len(prefix) : -4]) + 1)
        for name in names[-2000:]:  # the newest batches' keys (bounded: KEYS_KEPT)
            if name.endswith(".ids"):
                try:
                    self._remember(self.destination.read(f"{IDS}/{name}").decode("utf-8", "replace").split())
                except Exception as exc:
                    self.log(f"cannot read {IDS}/{name} ({type(exc).__name__}): its keys are not known")
        for name in spooled:
            self._remember((self.spool / IDS / name).read_text(encoding="utf-8").split())

    def _remember(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.seen[key] = None
        while len(self.seen) > KEYS_KEPT:
            self.seen.popitem(last=False)

    # -- taking rows ----------------------------------------------------------------------------------
    def add(self, rows: Iterable[tuple[str, dict[str, Any]]]) -> int:
        """Hold rows (key, row); a key seen before is dropped. The rows taken."""
        taken = 0
        with self.lock:
            for key, row in rows:
                if key in self.seen:
                    continue
                self.seen[key] = None
                self.rows.append(row)
                self.keys.append(key)
                taken += 1
            if taken and self.started is None:
                self.started = time.monotonic()
            while len(self.seen) > KEYS_KEPT:
                self.seen.popitem(last=False)
        return taken

    def due(self) -> bool:
        with self.lock:
            if not self.rows:
                return False
            return len(self.rows) >= self.options.max_rows or (
                self.started is not None and time.monotonic() - self.started >= self.options.max_seconds
            )

    # -- writing -------------------------------------------------------------------------------------
    def flush(self) -> int:
        """Write what is held (and first what the spool holds); the rows written or spooled."""
        with self.lock:
            rows, keys = self.rows, self.keys
            self.rows, self.keys, self.started = [], [], None
        self._unspool()
        if not rows:
            return 0
        batch = self.batch
        self.batch += 1
        files = self._files(rows, batch)
        files.append((f"{IDS}/{self.options.collector}-{batch:06d}.ids", ("\n".join(keys) + "\n").encode()))
        done = 0
        try:
            for name, data in files:
                self.destination.write(name, data)
                done += 1
        except Exception as exc:  # any failure of the destination: keep the rest locally
            if not self._to_spool(files[done:], exc) and done == 0:
                with self.lock:  # nothing written, nowhere to keep it: held again (and no more taken)
                    self.rows, self.keys = rows + self.rows, keys + self.keys
                    self.started = self.started or time.monotonic()
                self.batch = batch
            return len(rows)
        self.written += len(rows)
        self.full = False  # the destination takes files again
        self.log(f"wrote batch {batch} ({len(rows)} rows, {len(files) - 1} files) to {self.options.destination}")
        return len(rows)

    def _files(self, rows: list[dict[str, Any]], batch: int) -> list[tuple[str, bytes]]:
        return self.make_files(rows, f"{self.options.collector}-{batch:06d}")

    # -- the spool ----------------------------------------------------------------------------------
    def _spooled(self) -> list[Path]:
        if not self.spool.is_dir():
            return []
        return sorted(p for p in self.spool.rglob("*") if p.is_file() and not p.name.startswith("."))

    def _to_spool(self, files: list[tuple[str, bytes]], exc: Exception) -> bool:
        used = sum(p.stat().st_size for p in self._spooled())
        size = sum(len(data) for _, data in files)
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
        if used + size > self.options.spool_bytes:
            self.full = True
            self.log(
                f"cannot write to {self.options.destination} ({why}) and the spool {self.spool} is full "
                f"({used:,} of {self.options.spool_bytes:,} bytes): the batch is held in memory and no more rows "
                "are taken until the destination takes the spool (exporters get 503 and retry)"
            )
            return False
        for name, data in files:
            target = self.spool / name
            target.parent.mkdir(parents=True, exist_ok=True)
            aside = target.with_name(f".{target.name}.partial")
            aside.write_bytes(data)
            os.replace(aside, target)
        self.log(
            f"cannot write to {self.options.destination} ({why}): kept {len(files)} files in the spool "
            f"{self.spool} ({used + size:,} of {self.options.spool_bytes:,} bytes); they move when it can be written"
        )
        return True

    def _unspool(self) -> None:
        files = self._spooled()
        if not files:
            return
        ids = [p for p in files if p.suffix == ".ids"]
        data = [p for p in files if p.suffix != ".ids"]
        moved = 0
        try:
            for path in data + ids:  # a batch's keys after its rows
                self.destination.write(path.relative_to(self.spool).as_posix(), path.read_bytes())
                path.unlink()
                moved += 1
        except Exception:
            return  # still unwritable: the spool stays, as said when it was filled
        self.full = False
        self.log(f"moved {moved} spooled files to {self.options.destination}")
