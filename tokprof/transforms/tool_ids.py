"""Tool-call ids of the length a model's prompt format demands.

Mistral's request validator and templates take only tool-call ids of 9 letters and digits; an
OpenAI-style log has ids such as ``call_abc123...`` or ``toolu_01...``. :func:`fit_tool_call_ids`
maps each id that is not of that form to one that is, deterministically (the same id to the same
new one in every call, from its sha256, in base 62; ids already of the form keep theirs and are
never given to another), in the calls' assistant tool calls, tool messages and responses. The
prompt then holds the new ids, whose tokens may differ from the log's ids': the profile says so
with the warning :data:`WARN_TOOL_IDS`. The trace given is not changed: the result holds copies of
the messages whose ids change.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterable, Iterator

from tokprof.base.identity_cache import Recall
from tokprof.trace import Call, Trace

WARN_TOOL_IDS = "tool-call-ids-mapped"
MESSAGE = (
    "the model's prompt format takes only {length}-character tool-call ids (letters and digits), and this log's "
    "are not: each was mapped to one that is (the same id to the same one; tokprof.transforms.tool_ids), so "
    "their tokens are those of the mapped ids"
)
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _encoded(text: str, length: int) -> str:
    number = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest(), "big")
    out = []
    for _ in range(length):
        number, digit = divmod(number, len(_ALPHABET))
        out.append(_ALPHABET[digit])
    return "".join(out)


class ToolIdFitter:
    """:func:`fit_tool_call_ids` one call at a time, in log order (:meth:`fit`), for a trace held whole
    and for a stream of calls alike. ``taken``: the ids already of the form that no mapped id may
    become: a trace held whole gives all of its own; a stream, whose later ids are not known yet,
    gives none and each call's are added as it comes (a mapped id equal to one a later call already
    has, one chance in about 10^16 per pair of ids, would then be shared). A message shared by a call
    and the previous call of its thread gets one copy; no other message is held. With ``hold`` (a
    trace held whole, whose messages are alive anyway) every message shared by any calls gets one
    copy: calls of one thread that are not one conversation (a capture's interleaved requests) and
    threads that share messages keep sharing them."""

    def __init__(self, length: int = 9, taken: Iterable[str] = (), hold: bool = False) -> None:
        self.length = length
        self.valid = re.compile(f"^[A-Za-z0-9]{{{length}}}$")
        self.taken = set(taken)
        self.mapping: dict[str, str] = {}  # original -> new, in the order the originals came
        self._hold = hold
        self._copies: dict[str, Recall[dict]] = {}  # thread -> its messages' copies (all, with hold: one Recall)

    def _new(self, original: str) -> str:
        new = self.mapping.get(original)
        if new is None:
            salt = 0
            new = _encoded(original, self.length)
            while new in self.taken:  # never another id's
                salt += 1
                new = _encoded(f"{original}\x00{salt}", self.length)
            self.mapping[original] = new
            self.taken.add(new)
        return new

    def _seen(self, ident: object) -> None:
        if isinstance(ident, str) and self.valid.match(ident):
            self.taken.add(ident)

    def _copy(self, message: dict) -> dict:
        """The message with its ids mapped (itself when none needs it)."""
        calls = message.get("tool_calls") or []
        for tool_call in calls:
            self._seen(tool_call.get("id"))
        self._seen(message.get("tool_call_id"))
        changed = dict(message)
        if calls:
            changed["tool_calls"] = [
                {**c, "id": self._new(c["id"])} if self._invalid(c.get("id")) else c for c in message["tool_calls"]
            ]
        if self._invalid(message.get("tool_call_id")):
            changed["tool_call_id"] = self._new(message["tool_call_id"])
        return changed if changed != message else message

    def _invalid(self, ident: object) -> bool:
        return isinstance(ident, str) and not self.valid.match(ident)

    def fit(self, call: Call) -> Call:
        """The call with its ids mapped (a copy: the call given is not changed)."""
        copies = self._copies.setdefault("" if self._hold else call.thread, Recall())
        if not self._hold:
            copies.start()  # what this call shares with the thread's previous one
        messages = [copies.get(m, self._copy) for m in call.messages]
        response = copies.get(call.response, self._copy) if call.response else call.response
        return dataclasses.replace(call, messages=messages, response=response)

    def note(self, trace: Trace) -> None:
        """Tell ``trace`` (the fitted one) of the ids mapped: each id and the one it became."""
        for original, new in self.mapping.items():
            trace.note(WARN_TOOL_IDS, MESSAGE.format(length=self.length), f"{original} -> {new}")


def _ids(calls: Iterable[Call]) -> Iterator[str]:
    for call in calls:
        for message in [*call.messages, call.response] if call.response else call.messages:
            for tool_call in message.get("tool_calls") or []:
                if isinstance(tool_call.get("id"), str):
                    yield tool_call["id"]
            if isinstance(message.get("tool_call_id"), str):
                yield message["tool_call_id"]


def fit_tool_call_ids(trace: Trace, length: int = 9) -> Trace:
    """The trace with its tool-call ids that are not ``length`` letters and digits mapped to ones that
    are (see the module's docstring): a new trace, whose changed messages are copies; the trace given,
    and the messages its caller holds, are not changed (the trace itself when no id needs mapping)."""
    fitter = ToolIdFitter(length, hold=True)
    ids = list(_ids(trace.calls))
    if all(fitter.valid.match(i) for i in ids):
        return trace
    fitter.taken.update(i for i in ids if fitter.valid.match(i))
    out = dataclasses.replace(
        trace,
        calls=[fitter.fit(c) for c in trace.calls],
        notes=[dataclasses.replace(n, places=list(n.places)) for n in trace.notes],
    )
    fitter.note(out)
    return out


def fitter(model: object) -> ToolIdFitter | None:
    """The per-call form of :func:`fit` for a stream of calls (None when the model's format takes any
    ids): ``fitter.fit(call)`` for each call in log order, then ``fitter.note(trace)``."""
    length = getattr(model, "tool_call_id_length", None)
    return ToolIdFitter(length) if length else None


def fit(trace: Trace, model: object) -> Trace:
    """The trace as the model's prompt format takes it: its tool-call ids mapped when the format
    demands ids of one length (``ChatModel.tool_call_id_length``)."""
    length = getattr(model, "tool_call_id_length", None)
    if length:
        return fit_tool_call_ids(trace, length)
    return trace
