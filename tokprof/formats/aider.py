"""aider chat histories: ``.aider.chat.history.md`` in a repository (``--chat-history-file``,
``$AIDER_CHAT_HISTORY_FILE``).

aider (Aider-AI/aider, ``aider/io.py``) appends the chat to a Markdown file as it goes:

* ``# aider chat started at <local time>`` starts a session (a file holds every session run there);
* ``#### <line>``: the user's input (a ``/command`` is aider's own: ``/ask``, ``/code``,
  ``/architect`` and ``/context`` send the rest of the line; ``/clear`` and ``/reset`` empty the
  history; other commands send nothing);
* ``> <line>``: aider's own output (``tool_output``), among it ``Model:`` / ``Main model:`` /
  ``Models:`` (the model) and, after each reply, the usage report
  ``Tokens: <sent> sent[, <n> cache write][, <n> cache hit], <received> received.
  Cost: $<message> message, $<session> session.`` (``aider/coders/base_coder.py``);
* other lines: the model's reply, as it was shown (aider ends its own lines with two spaces, a
  Markdown line break: a ``#### `` heading or ``> `` quote of a reply, without them, stays in the reply).

**Calls.** Each ``Tokens:`` line is a call (aider prints one per reply; a reply continued past the
output limit is several requests in one line), made on the session's history before the reply: the
user's inputs and the earlier replies. Each session is its own thread, named by its start time, when
the file holds more than one.

**Usage.** ``sent`` is the whole prompt (aider adds LiteLLM's cache writes to ``prompt_tokens``, which
holds the cache reads): ``prompt`` = sent, ``cache_write`` = cache write, ``cache_read`` = cache hit,
``output`` = received. aider prints counts of 1,000 or more rounded (``format_tokens``: ``1.2k`` to the
hundred below 10,000, ``12k`` to the thousand above): those calls' usage is **approximate** (note
``approximate-usage`` names each), never shown as exact. Older versions printed exact counts
(``1,234``). The cost aider computed is in the note ``log-cost``.

**What is not recorded:** the system prompt, the repository map and the files aider added to the chat
(the prompt's larger part), and the tool definitions: they are the inferred ``unrecorded`` part.

**A fold** (#43.1): the file is read line by line (never whole), and each call is given as its Tokens
line is read, but for the calls of the first session with calls: their thread (the session's start
when the file has several such sessions, else none) is known once a second one makes a call, or at
the end. A session is held until the next one starts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import tokprof.base.bounded as bounded
from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation
from tokprof.formats.folds import Made
from tokprof.formats.jsonfile import Document, open_bytes
from tokprof.formats.locations import Location
from tokprof.formats.neutral import check_count, parse_time
from tokprof.formats.reader import LogFormat, Reader, Record
from tokprof.trace import Call, Trace, Usage

FORMAT = "aider"
DESCRIPTION = "aider chat history (.aider.chat.history.md in a repository)"

FILE_NAME = ".aider.chat.history.md"
STARTED = "# aider chat started at "
NUMBER = r"[0-9][0-9,]*(?:\.[0-9]+)?[kM]?"
TOKENS = re.compile(
    rf"^Tokens: (?P<sent>{NUMBER}) sent"
    rf"(?:, (?P<write>{NUMBER}) cache write)?"
    rf"(?:, (?P<hit>{NUMBER}) cache hit)?"
    rf", (?P<received>{NUMBER}) received\.?"
    r"(?:\s+Cost: \$(?P<cost>[0-9.,]+) (?:message|request), \$(?P<session>[0-9.,]+) session\.?)?"
)
MODEL = re.compile(r"^(?:Main model|Model|Models): (?P<model>\S+)")
SENT_COMMANDS = ("/ask", "/code", "/architect", "/context")
CLEARING = ("/clear", "/reset")
APPROXIMATE = (
    "aider prints token counts of 1,000 or more rounded (1.2k: to the hundred; 12k: to the thousand): these "
    "calls' usage is approximate"
)
LOG_COST = "the cost aider itself computed for each session (its last Cost line), beside the one tokprof computes"
NO_REPLY = "a Tokens line with no user input before it in its session: no prompt to profile, its usage is not counted"


def opens(path: str) -> bool:
    """A file named ``.aider.chat.history.md``, or a Markdown file that starts as one."""
    if os.path.basename(path) == FILE_NAME:
        return os.path.isfile(path)
    if not path.endswith(".md"):
        return False
    try:
        with bounded.open_input(path) as f:
            head = f.read(256)
    except OSError:
        return False
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(STARTED.encode())


def sniff(doc: Document) -> bool:
    return False  # a Markdown file, never JSON: found by opens()


def count(path: str, where: str, text: str) -> tuple[int, bool]:
    """A count as aider prints it, and whether it is rounded."""
    if text.endswith(("k", "M")):
        scale = 1000 if text.endswith("k") else 1_000_000
        try:
            value = round(float(text[:-1]) * scale)
        except ValueError:
            raise InputError(path, where, f"a token count that cannot be read: {text!r}") from None
        return check_count(path, where, value) or 0, True
    if "." in text:
        raise InputError(path, where, f"a token count that cannot be read: {text!r}")
    return check_count(path, where, int(text.replace(",", ""))) or 0, False


@dataclass
class _Session:
    start: str
    where: str
    chat: Conversation
    calls: list[Call] = field(default_factory=list)  # its first call, once it has made one (the reader's mark)
    user: list[str] = field(default_factory=list)
    reply: list[str] = field(default_factory=list)
    cost: str | None = None


class _Reader:
    def __init__(self, trace: Trace, made: Made) -> None:
        self.trace = trace
        self.made = made
        self.sessions: list[_Session] = []
        self.model: str | None = None

    @property
    def session(self) -> _Session:
        if not self.sessions:  # lines before any header: a session of their own
            self.sessions.append(_Session("", "line 1", Conversation(self.trace, self.made)))
        return self.sessions[-1]

    def line(self, number: int, raw: str) -> None:
        where = f"line {number}"
        text = raw.rstrip()
        # aider ends the lines it writes for the user and itself with a Markdown line break (two spaces); a
        # reply's own heading (#### Step 1) or quote (> note) has none, and stays in the reply
        marked = raw.endswith("  ") or not self.session.reply or text.startswith("> Tokens:")
        if text.startswith(STARTED):
            self.flush()
            self.sessions.append(_Session(text[len(STARTED) :].strip(), where, Conversation(self.trace, self.made)))
        elif (text == "####" or text.startswith("#### ")) and marked:
            self.flush_reply(where)
            self.session.user.append(text[5:])
        elif (text == ">" or text.startswith("> ")) and marked:
            self.flush_user(where)
            self.output(where, text[2:])
        else:
            self.flush_user(where)
            self.session.reply.append(raw.rstrip("\n").removesuffix("  "))

    def output(self, where: str, text: str) -> None:
        found = MODEL.match(text)
        if found:
            self.model = found.group("model")
            return
        if not text.startswith("Tokens:"):
            return
        match = TOKENS.match(text)
        if match is None:
            raise InputError(self.trace.path, where, f"a usage line that cannot be read: {text[:120]!r}")
        path = self.trace.path
        sent, rough = count(path, where + ": sent", match.group("sent"))
        output, rough_out = count(path, where + ": received", match.group("received"))
        write, rough_write = count(path, where + ": cache write", match.group("write") or "0")
        hit, rough_hit = count(path, where + ": cache hit", match.group("hit") or "0")
        approximate = rough or rough_out or rough_write or rough_hit
        if hit + write > sent:
            if not approximate:
                raise InputError(
                    path, where, f"{hit + write:,} cache tokens, more than the {sent:,} sent that include them"
                )
            sent = hit + write  # rounded apart: the prompt is at least its cached parts
        if approximate:
            self.trace.note("approximate-usage", APPROXIMATE, where)
        usage = Usage(
            prompt=sent,
            cache_read=hit if match.group("hit") else None,
            cache_write=write if match.group("write") else None,
            output=output,
        )
        session = self.session
        if match.group("session"):
            session.cost = match.group("session")
        reply = "\n".join(session.reply).strip()
        session.reply = []
        if not session.chat.messages:
            self.trace.note("no-prompt", NO_REPLY, where)
            return
        clean = session.chat.check({"role": "assistant", "content": reply}, where)
        session.chat.call(where, self.model, usage, clean, parse_time(session.start))
        session.chat.messages.append(clean)

    def flush_user(self, where: str) -> None:
        session = self.session
        if not session.user:
            return
        text = "\n".join(session.user).strip()
        session.user = []
        if text.startswith("/"):
            command, _, rest = text.partition(" ")
            if command in CLEARING:
                session.chat.replace([])
                return
            if command not in SENT_COMMANDS:
                return
            text = rest.strip()
        if text:
            session.chat.add({"role": "user", "content": text}, where)

    def flush_reply(self, where: str) -> None:
        """A reply with no usage line after it (aider printed none: an interrupted reply) joins the history."""
        session = self.session
        reply = "\n".join(session.reply).strip()
        session.reply = []
        if reply and session.chat.messages:
            session.chat.add({"role": "assistant", "content": reply}, where)

    def flush(self) -> None:
        if self.sessions:
            self.flush_user("end")
            self.flush_reply("end")


class AiderReader(Reader):
    """An aider chat history read as a fold over its lines (see the module's docstring): the reader
    reads the file itself (it is not JSON), feeding itself each line."""

    def __init__(self, path: str, doc: Document | None) -> None:
        if doc is not None:
            raise InputError(path, None, "expected an aider chat history (Markdown), not JSON")
        self.trace = Trace(path=path, format=FORMAT, unrecorded=("system", "tools"))
        self.made = Made()
        self.reader = _Reader(self.trace, self.made)
        self.folder = str(Path(path).resolve().parent)
        self.used: list[tuple[str, str | None]] = []  # the sessions with calls: (start, aider's cost)
        self.first: list[Call] = []  # the first session's calls, until their thread is known
        self.text = False  # whether a line that is not blank was read

    def feed(self, record: Record) -> list[Call]:
        number, raw = record.line or 0, record.value
        self.text = self.text or bool(raw.strip())
        self.reader.line(number, raw)
        return self._given()

    def _given(self) -> list[Call]:
        calls, reader = self.made.take(), self.reader
        for old in reader.sessions[:-1]:  # a session that has ended
            self._ended(old)
        del reader.sessions[:-1]
        if not calls:
            return []
        session = reader.sessions[-1]
        if not session.calls:  # the session's first call
            session.calls.append(calls[0])
            self.used.append((session.start, None))
        for call in calls:
            call.cwd = self.folder
        if len(self.used) == 1:
            self.first += calls
            return []
        out, self.first = self.first, []
        for call in out:
            call.thread = self.used[0][0]
        for call in calls:
            call.thread = session.start
        return out + calls

    def _ended(self, session: _Session) -> None:
        """A session read to its end: its cost, when it made calls (it is the last that did)."""
        if session.calls:
            self.used[-1] = (session.start, session.cost)

    def finish(self) -> Iterator[Call]:
        for number, raw in _lines(self.trace.path):
            yield from self.feed(Record(raw, number))
        if not self.text:
            raise InputError(self.trace.path, None, "file is empty")
        self.reader.flush()
        yield from self._given()
        if self.reader.sessions:
            self._ended(self.reader.sessions[-1])
        trace = self.trace
        if len(self.used) == 1:
            yield from self.first  # the one session with calls: its calls have no thread
            self.first = []
            trace.session = self.used[0][0] or None
        costs = [f"{start or 'session'}: ${cost}" for start, cost in self.used if cost]
        if costs:
            trace.note("log-cost", LOG_COST, "; ".join(costs))
        trace.model = self.made.model()


def _lines(path: str) -> Iterator[tuple[int, str]]:
    """A text file's lines as :meth:`str.splitlines` splits them, numbered, read a line at a time: UTF-8
    (a byte-order mark dropped; a byte that is not UTF-8 is one line naming its place)."""
    number, offset = 0, 0
    with open_bytes(path) as f:
        first = True
        while True:
            try:
                data = f.readline()
            except OSError as exc:
                raise InputError(path, None, f"cannot read: {exc.strerror}") from None
            if not data:
                return
            if first and data.startswith(b"\xef\xbb\xbf"):
                data = data[3:]
            first = False
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(path, f"byte {offset + exc.start}", "not UTF-8 text") from None
            offset += len(data)
            for piece in text.splitlines():
                number += 1
                yield number, piece


LOCATIONS = (
    Location(
        "aider",
        "",
        (FILE_NAME, f"*/{FILE_NAME}", f"*/*/{FILE_NAME}"),
        env="AIDER_CHAT_HISTORY_FILE",
    ),
)

LOG_FORMAT = LogFormat(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    AiderReader,
    opens=opens,
    file_names=(FILE_NAME,),
    sessions=True,
    locations=LOCATIONS,
    records_what="per-reply usage as printed (rounded counts approximate); no system prompt, files or repo map",
)
