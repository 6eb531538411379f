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
* other lines: the model's reply, as it was shown.

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
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import tokprof.base.bounded as bounded
from tokprof.base.errors import InputError
from tokprof.formats.conversation import Conversation, finish
from tokprof.formats.jsonfile import Document, read_text
from tokprof.formats.locations import Location
from tokprof.formats.neutral import check_count, parse_time
from tokprof.formats.reader import whole_read_format
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
    calls: list[Call] = field(default_factory=list)
    user: list[str] = field(default_factory=list)
    reply: list[str] = field(default_factory=list)
    cost: str | None = None


class _Reader:
    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.sessions: list[_Session] = []
        self.model: str | None = None

    @property
    def session(self) -> _Session:
        if not self.sessions:  # lines before any header: a session of their own
            self.sessions.append(_Session("", "line 1", Conversation(self.trace)))
        return self.sessions[-1]

    def line(self, number: int, raw: str) -> None:
        where = f"line {number}"
        text = raw.rstrip()
        if text.startswith(STARTED):
            self.flush()
            self.sessions.append(_Session(text[len(STARTED) :].strip(), where, Conversation(self.trace)))
        elif text == "####" or text.startswith("#### "):
            self.flush_reply(where)
            self.session.user.append(text[5:])
        elif text == ">" or text.startswith("> "):
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
        call = session.chat.call(where, self.model, usage, clean, parse_time(session.start))
        if call is not None:
            session.calls.append(call)
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


def read_file(path: str) -> Trace:
    text = read_text(path)
    trace = Trace(path=path, format=FORMAT, unrecorded=("system", "tools"))
    reader = _Reader(trace)
    for number, raw in enumerate(text.splitlines(), 1):
        reader.line(number, raw)
    reader.flush()
    used = [s for s in reader.sessions if s.calls]
    several = len(used) > 1
    calls: list[Call] = []
    folder = str(Path(path).resolve().parent)
    for session in used:
        for call in session.calls:
            call.thread = session.start if several else ""
            call.cwd = folder
            call.index = len(calls)
            calls.append(call)
    trace.calls = calls
    if len(used) == 1:
        trace.session = used[0].start or None
    costs = [f"{s.start or 'session'}: ${s.cost}" for s in used if s.cost]
    if costs:
        trace.note("log-cost", LOG_COST, "; ".join(costs))
    return finish(trace)


def read(path: str, doc: Document) -> Trace:
    raise InputError(path, None, "expected an aider chat history (Markdown), not JSON")


LOCATIONS = (
    Location(
        "aider",
        "",
        (FILE_NAME, f"*/{FILE_NAME}", f"*/*/{FILE_NAME}"),
        env="AIDER_CHAT_HISTORY_FILE",
    ),
)

LOG_FORMAT = whole_read_format(
    FORMAT,
    DESCRIPTION,
    "agent",
    sniff,
    read,
    opened=read_file,
    opens=opens,
    file_names=(FILE_NAME,),
    sessions=True,
    locations=LOCATIONS,
    records_what="per-reply usage as printed (rounded counts approximate); no system prompt, files or repo map",
)
