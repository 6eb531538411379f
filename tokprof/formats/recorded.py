"""One recorded exchange read on its own: the model call a line of a capture holds (a ``tokprof
record`` line as it is written), for the live figures of a recording.

The line's URL picks the reader: ``/v1/messages`` Anthropic, ``/chat/completions`` OpenAI Chat
Completions, ``/responses`` OpenAI Responses. Anything else (``count_tokens``, another endpoint), an
error response or a line its reader rejects is no call. A line is read without the lines before it:
a Responses call that continues an earlier response (``previous_response_id``) has only its own input.
"""

from __future__ import annotations

from typing import Any

from tokprof.errors import InputError
from tokprof.formats import reader
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
        trace = reader(name).read(path, Document(lines=Lines([(number, record)])))
    except InputError:
        return None
    return trace.calls[0] if trace.calls else None
