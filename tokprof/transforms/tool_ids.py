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
from collections.abc import Iterable

from tokprof.base.identity_cache import Recall
from tokprof.trace import Call, PromptView, Trace

WARN_TOOL_IDS = "tool-call-ids-mapped"
MESSAGE = (
    "the model's prompt format takes only {length}-character tool-call ids (letters and digits), and this log's "
    "are not: each was mapped to one that is (the same id to the same one; tokprof.transforms.tool_ids), so "
    "their tokens are those of the mapped ids"
)
#: The lists of prompts whose fitted copies are kept (the conversations last seen, most recent last).
VIEWS = 32
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _encoded(text: str, length: int) -> str:
    number = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest(), "big")
    out = []
    for _ in range(length):
        number, digit = divmod(number, len(_ALPHABET))
        out.append(_ALPHABET[digit])
    return "".join(out)


class ToolIdFitter:
    """:func:`fit_tool_call_ids` one call at a time, in log order (:meth:`fit`): the one way ids are
    fitted, for a trace held whole (every call fed) and a stream of calls alike. ``taken``: the ids
    already of the form, which no mapped id may become: each call's are added as it comes (a mapped
    id equal to one a later call has, one chance in about 10^16 per pair of ids, would be shared). A
    call costs what it adds: a prompt that is a view of a list (:class:`tokprof.trace.PromptView`)
    is fitted as a view of one list of copies of that list, which grows with the messages the calls
    add (one message, one copy); another prompt's messages shared with the previous call of its thread get one copy. A call
    whose ids all are of the form is given back as it is."""

    def __init__(self, length: int = 9, taken: Iterable[str] = ()) -> None:
        self.length = length
        self.valid = re.compile(f"^[A-Za-z0-9]{{{length}}}$")
        self.taken = set(taken)
        self.mapping: dict[str, str] = {}  # original -> new, in the order the originals came
        self._copies: dict[str, Recall[dict]] = {}  # thread -> its last prompt's messages' copies
        #: id(list) -> (a list prompts are views of, its messages fitted so far, whether any changed), the
        #: :data:`VIEWS` lists of the most recent prompts (conversations a capture interleaves)
        self._views: dict[int, tuple[list[dict], list[dict], list[bool]]] = {}

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
        """The call with its ids mapped (a copy: the call given is not changed; itself when no id needs it)."""
        messages = self._prompt(call.messages, call.thread)
        response = self._copy(call.response) if call.response else call.response
        if messages is call.messages and response is call.response:
            return call
        return dataclasses.replace(call, messages=messages, response=response)

    def _prompt(self, prompt: list[dict] | PromptView, thread: str) -> list[dict] | PromptView:
        if isinstance(prompt, PromptView):
            views = self._views
            found = views.pop(id(prompt.base), None)
            if found is None or found[0] is not prompt.base or len(found[1]) > prompt.length:
                found = (prompt.base, [], [False])
            views[id(prompt.base)] = found  # the most recent last
            while len(views) > VIEWS:
                del views[next(iter(views))]
            base, fitted, changed = found
            for message in base[len(fitted) : prompt.length]:
                copy = self._copy(message)
                changed[0] = changed[0] or copy is not message
                fitted.append(copy)
            return PromptView(fitted, prompt.length) if changed[0] else prompt
        copies = self._copies.setdefault(thread, Recall())
        copies.start()  # what this call shares with the thread's previous one
        messages = [copies.get(m, self._copy) for m in prompt]
        return prompt if all(a is b for a, b in zip(messages, prompt)) else messages

    def note(self, trace: Trace) -> None:
        """Tell ``trace`` (the fitted one) of the ids mapped: each id and the one it became."""
        for original, new in self.mapping.items():
            trace.note(WARN_TOOL_IDS, MESSAGE.format(length=self.length), f"{original} -> {new}")


def fit_tool_call_ids(trace: Trace, length: int = 9) -> Trace:
    """The trace with its tool-call ids that are not ``length`` letters and digits mapped to ones that
    are (see the module's docstring): every call fed to a :class:`ToolIdFitter`, in a new trace whose
    changed messages are copies; the trace given, and the messages its caller holds, are not changed
    (the trace itself when no id needs mapping)."""
    fitter = ToolIdFitter(length)
    calls = [fitter.fit(c) for c in trace.calls]
    if not fitter.mapping:
        return trace
    out = dataclasses.replace(
        trace, calls=calls, notes=[dataclasses.replace(n, places=list(n.places)) for n in trace.notes]
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
