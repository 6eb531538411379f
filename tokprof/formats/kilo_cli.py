"""Kilo CLI sessions: ``kilo.db``, the SQLite store of Kilo Code's command-line agent, a fork of OpenCode.

Where: ``~/.local/share/kilo/kilo.db`` (``$XDG_DATA_HOME/kilo``; the same folder below the user's on
macOS and Windows, as OpenCode's), or the folders ``$KILO_DATA_DIR`` lists (comma-separated), as
ccusage's Kilo reader (``adapter/kilo``) finds it. The store has OpenCode's tables (``session``,
``message``, ``part``, each row's content a JSON ``data`` column, ``tokens{input, output, reasoning,
cache{read, write}}`` per assistant step): it is read by the OpenCode reader
(:class:`tokprof.formats.opencode.OpenCodeReader`, a fold giving each call as it is made), its trace's
format ``kilo-cli/sqlite``. Usage per call as
OpenCode's: ``prompt`` = ``input + cache.read + cache.write``, ``output`` = ``output + reasoning``; the
cost Kilo computed is in ``log-cost``. A store is Kilo's by its name, ``kilo.db``: its tables are
OpenCode's.
"""

from __future__ import annotations

import os

from tokprof.base.errors import InputError
from tokprof.formats import agent_db, opencode
from tokprof.formats.jsonfile import Document
from tokprof.formats.locations import Location
from tokprof.formats.reader import LogFormat, Reader

FORMAT = "kilo-cli"
DESCRIPTION = "Kilo CLI sessions (~/.local/share/kilo/kilo.db, SQLite, OpenCode's tables): the newest main session"
STORE = "kilo.db"


def sniff(doc: Document) -> bool:
    return False  # a store, not JSON: recognised by :func:`is_store`


def is_store(path: str) -> bool:
    return os.path.basename(path) == STORE and "data" in agent_db.tables(path).get("message", set())


def reader(path: str, doc: Document | None) -> Reader:
    """OpenCode's reader of its store, under Kilo's name; a JSON file is not Kilo's."""
    if doc is not None:
        raise InputError(path, None, "expected Kilo CLI's kilo.db (SQLite)")
    return opencode.OpenCodeReader(path, None, FORMAT)


LOCATIONS = (
    Location("kilo-cli", ".local/share/kilo", (STORE,), env="KILO_DATA_DIR", project_depth=0, several=True),
    Location("kilo-cli", ".local/share/kilo", (STORE,), env="XDG_DATA_HOME", below_env="kilo", project_depth=0),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    reader,
    sessions=True,
    opens=is_store,
    locations=LOCATIONS,
    records_what="per-step usage and cost (OpenCode's tables); no system prompt or tool definitions",
)
