"""An agent's SQLite store, read without ever changing it (Goose's ``sessions.db``, Hermes' ``state.db``,
Zed's ``threads.db``, Kilo CLI's ``kilo.db``).

The file is read without a byte written to it or beside it (:func:`opened`): as it stands when the
agent is not writing it, through SQLite's read-only open when the agent runs with a write-ahead log,
else (the agent holds it locked, a hot journal, a log without its shared memory) from a copy of it and
its ``-wal`` or ``-journal`` file in a temporary folder, removed after. A file that cannot be read at all, or is no SQLite database, is one
:class:`InputError` naming the file.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tokprof.base.bounded as bounded
from tokprof.base.errors import InputError
from tokprof.formats.jsonfile import kind_of, parse
from tokprof.formats.folds import Made
from tokprof.formats.fields import expect_object
from tokprof.formats.jsonfile import Document
from tokprof.formats.reader import Reader, Record
from tokprof.trace import Call, Trace

if TYPE_CHECKING:
    import sqlite3

SQLITE_MAGIC = b"SQLite format 3\x00"
#: How long a read waits for the agent's write lock before reading from a copy (seconds).
BUSY_WAIT = 0.2


def is_sqlite(path: str) -> bool:
    """Whether a file starts with SQLite's header."""
    try:
        with bounded.open_input(path) as f:
            return bool(f.read(16) == SQLITE_MAGIC)
    except OSError:
        return False


def _connect(path: Path, options: str = "") -> "sqlite3.Connection":
    import sqlite3

    uri = "file:" + path.resolve().as_posix() + (f"?{options}" if options else "")
    db = sqlite3.connect(uri, uri=True, timeout=BUSY_WAIT)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except BaseException:
        db.close()
        raise
    return db


def _beside(source: Path, suffix: str) -> Path:
    return source.with_name(source.name + suffix)


@contextlib.contextmanager
def opened(path: str) -> Iterator["sqlite3.Connection"]:
    """The store at ``path``, read without a file written beside it, or a copy of it when it cannot be.

    * No write-ahead log and no rollback journal beside it (the agent is not writing): the file is read
      as it stands (``immutable``: no lock taken, no ``-shm`` or ``-wal`` made).
    * A write-ahead log with its shared-memory file (the agent is running): SQLite's read-only open,
      which reads the log the agent shares.
    * Otherwise (a hot rollback journal: the agent is in a write; a log without its shared memory), or
      when that open fails (locked): a copy of the store and its journal or log, read in a temporary
      folder removed after."""
    import sqlite3

    source = Path(path)
    wal, shm, journal = (_beside(source, suffix).exists() for suffix in ("-wal", "-shm", "-journal"))
    folder: str | None = None
    try:
        try:
            if not (wal or journal):
                db = _connect(source, "mode=ro&immutable=1")
            elif wal and shm and not journal:
                db = _connect(source, "mode=ro")
            else:
                raise sqlite3.OperationalError("the agent is writing it (a journal or log beside it)")
        except sqlite3.DatabaseError as exc:
            if not isinstance(exc, sqlite3.OperationalError):  # not a database: a copy is no better
                raise InputError(path, None, f"not a SQLite database ({exc})") from None
            folder = tempfile.mkdtemp(prefix="tokprof-db-")
            db = _copy(path, source, Path(folder), exc)
        try:
            yield db
        finally:
            db.close()
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _copy(path: str, source: Path, folder: Path, why: Exception) -> "sqlite3.Connection":
    """A copy of the store (and its write-ahead log) in ``folder``, opened."""
    import sqlite3

    copy = folder / "store.db"
    try:
        shutil.copyfile(source, copy)
        for suffix in ("-wal", "-journal"):  # the log is applied, a hot journal rolled back, in the copy alone
            if _beside(source, suffix).is_file():
                shutil.copyfile(_beside(source, suffix), folder / f"store.db{suffix}")
    except OSError as exc:
        raise InputError(
            path, None, f"cannot read the database ({why}; a copy failed too: {exc.strerror or exc})"
        ) from None
    try:
        return _connect(copy)  # the copy is ours: its log may be applied, its journal rolled back
    except sqlite3.DatabaseError as exc:
        raise InputError(path, None, f"cannot read the database ({why}; its copy: {exc})") from None


class StoreFold(Reader):
    """A reader of an agent's SQLite store as a fold over its rows (#43.1): :meth:`read` goes through the
    session's rows in one read transaction, yielding after each row it reads, and the calls made are
    given then (:meth:`given` completes them); a database error on the way is one line naming the
    agent's store. A store is not JSON: the reader takes no records, it reads the store when finished."""

    format = ""  # the format's name
    agent = ""  # the agent's name as a user knows it
    not_store = ""  # what a JSON file read as this format's is told

    def __init__(self, path: str, doc: Document | None) -> None:
        if doc is not None:
            raise InputError(path, None, self.not_store)
        self.trace = Trace(path=path, format=self.format, unrecorded=("system", "tools"))
        self.made = Made()
        self.cwd: str | None = None  # the project the session's agent worked in, when the store says

    def feed(self, record: Record) -> Iterable[Call]:
        raise RuntimeError("a store takes no records: its reader reads it")

    def finish(self) -> Iterator[Call]:
        import sqlite3

        path = self.trace.path
        with opened(path) as db:
            try:
                for _ in self.read(db):
                    yield from self.given(self.ready())
                yield from self.given(self.rest())
            except sqlite3.DatabaseError as exc:
                raise InputError(path, None, f"cannot read {self.agent}'s database ({exc})") from None
        self.trace.model = self.made.model()

    def read(self, db: "sqlite3.Connection") -> Iterator[None]:
        raise NotImplementedError

    def ready(self) -> list[Call]:
        """The calls no row still to read can change (by default every call made)."""
        return self.made.take()

    def rest(self) -> list[Call]:
        """The calls still held once every row is read."""
        return self.made.take()

    def given(self, calls: list[Call]) -> list[Call]:
        """The calls given, with the session's project."""
        for call in calls:
            call.cwd = self.cwd
        return calls


def tables(path: str) -> dict[str, set[str]]:
    """The tables of a SQLite file and their columns (to recognise whose store it is), empty when it
    cannot be read: read as the file stands, ignoring the agent's lock (``immutable``), else through
    SQLite's read-only open (a store new enough that its tables are still only in its write-ahead log)."""
    import sqlite3

    if not is_sqlite(path):
        return {}
    for options in ("mode=ro&immutable=1", "mode=ro"):
        try:
            db = sqlite3.connect(f"file:{Path(path).resolve().as_posix()}?{options}", uri=True, timeout=BUSY_WAIT)
        except sqlite3.Error:
            continue
        try:
            names = [str(row[0]) for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            if names:
                return {name: columns(db, name) for name in names}
        except sqlite3.Error:
            pass
        finally:
            db.close()
    return {}


def columns(db: "sqlite3.Connection", table: str) -> set[str]:
    """The columns of a table (empty when there is no such table)."""
    quoted = table.replace('"', '""')
    return {str(row[1]) for row in db.execute(f'PRAGMA table_info("{quoted}")')}


def require(path: str, db: "sqlite3.Connection", table: str, needed: tuple[str, ...], agent: str) -> set[str]:
    """A table's columns, or an error naming what the store lacks (not the agent's store)."""
    found = columns(db, table)
    missing = [name for name in needed if name not in found]
    if not found:
        raise InputError(path, None, f"not a {agent} database: no table {table!r}")
    if missing:
        raise InputError(path, table, f"not a {agent} database: no column {', '.join(missing)}")
    return found


def json_column(path: str, where: str, data: Any) -> Any:
    """A column that holds JSON text."""
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    if not isinstance(data, str):
        raise InputError(path, where, f"expected JSON text, found {kind_of(data)}")
    try:
        return parse(data)
    except ValueError as exc:
        raise InputError(path, where, f"invalid JSON: {exc}") from None


def json_object_column(path: str, where: str, data: Any) -> dict:
    return expect_object(path, where, json_column(path, where, data))


def count_column(path: str, where: str, value: Any) -> int | None:
    """A token count column: a whole number of 0 or more, or None when NULL."""
    from tokprof.formats.neutral import check_count

    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return check_count(path, where, value)
