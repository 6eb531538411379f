"""One recorded exchange read on its own: the model call a line of a capture holds (a ``tokprof
record`` line as it is written), for the live figures of a recording.

The line's URL picks the reader: ``/v1/messages`` Anthropic, ``/chat/completions`` OpenAI Chat
Completions, ``/responses`` OpenAI Responses. Anything else (``count_tokens``, another endpoint), an
error response or a line its reader rejects is no call. A line is read without the lines before it:
a Responses call that continues an earlier response (``previous_response_id``) has only its own input.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tokprof.base.errors import InputError
from tokprof.formats import Log, log_format
from tokprof.formats.capture import url_path
from tokprof.formats.jsonfile import Document, Lines
from tokprof.trace import Call

#: Which reader takes a recorded URL path, by how the path ends.
READER_OF = (("/v1/messages", "anthropic"), ("/chat/completions", "openai-chat"), ("/responses", "openai-responses"))


def reader_of(record: Any) -> str | None:
    """The format whose reader takes a recorded line, by its URL; None for other endpoints."""
    path = url_path(record) or ""
    return next((name for suffix, name in READER_OF if path.endswith(suffix)), None)


def call_of(path: str, number: int, record: Any) -> Call | None:
    """The model call of one recorded line (line ``number`` of ``path``), or None when it holds none."""
    name = reader_of(record)
    if name is None:
        return None
    try:
        doc = Document(lines=Lines([(number, record)]))
        found = log_format(name)
        trace = Log(path, found, found.reader(path, doc), doc).read()
    except InputError:
        return None
    return trace.calls[0] if trace.calls else None


#: How ``tokprof record`` names a recording: the run's start (UTC) and the agent.
RECORDING_NAME = re.compile(r"^\d{8}T\d{6}Z-.+\.jsonl$")


def is_recording(path: Path) -> bool:
    """Whether a file is a recording ``tokprof record`` wrote: its name, and a first line that says so
    (``tokprof_record``). An empty recording (a run without calls yet) is one too."""
    if not RECORDING_NAME.match(path.name) or not path.is_file():
        return False
    try:
        with open(path, "rb") as f:
            first = f.readline()
    except OSError:
        return False
    if not first.strip():
        return True
    try:
        record = json.loads(first)
    except ValueError:
        return False
    return isinstance(record, dict) and isinstance(record.get("tokprof_record"), dict)


def recordings(directory: str) -> list[Path]:
    """The recordings in a directory (not its subfolders), oldest first (their names start with the
    time), or none when any other log file is there too (a folder of agent sessions)."""
    folder = Path(directory)
    files = sorted(p for p in folder.iterdir() if p.suffix in (".jsonl", ".json") and p.is_file())
    found = [p for p in files if is_recording(p)]
    return found if len(found) == len(files) else []
