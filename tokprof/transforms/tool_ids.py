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


def fit_tool_call_ids(trace: Trace, length: int = 9) -> Trace:
    """The trace with its tool-call ids that are not ``length`` letters and digits mapped to ones that
    are (see the module's docstring): a new trace, whose changed messages are copies; the trace given,
    and the messages its caller holds, are not changed."""
    valid = re.compile(f"^[A-Za-z0-9]{{{length}}}$")
    messages = []
    for call in trace.calls:
        messages += list(call.messages) + ([call.response] if call.response else [])
    ids: list[str] = []
    for message in messages:
        for tool_call in message.get("tool_calls") or []:
            if isinstance(tool_call.get("id"), str):
                ids.append(tool_call["id"])
        if isinstance(message.get("tool_call_id"), str):
            ids.append(message["tool_call_id"])
    taken = {i for i in ids if valid.match(i)}
    mapping: dict[str, str] = {}
    for original in dict.fromkeys(i for i in ids if not valid.match(i)):
        salt = 0
        new = _encoded(original, length)
        while new in taken:  # never another id's
            salt += 1
            new = _encoded(f"{original}\x00{salt}", length)
        mapping[original] = new
        taken.add(new)
    if not mapping:
        return trace
    copies: dict[int, dict] = {}  # id of a message -> its copy with the new ids (shared messages: one copy)
    for message in messages:
        if id(message) in copies:
            continue
        changed = dict(message)
        if message.get("tool_calls"):
            changed["tool_calls"] = [
                {**c, "id": mapping[c["id"]]} if c.get("id") in mapping else c for c in message["tool_calls"]
            ]
        if message.get("tool_call_id") in mapping:
            changed["tool_call_id"] = mapping[message["tool_call_id"]]
        copies[id(message)] = changed if changed != message else message

    def fitted(call: Call) -> Call:
        response = copies.get(id(call.response), call.response) if call.response else call.response
        return dataclasses.replace(call, messages=[copies[id(m)] for m in call.messages], response=response)

    out = dataclasses.replace(
        trace,
        calls=[fitted(c) for c in trace.calls],
        notes=[dataclasses.replace(n, places=list(n.places)) for n in trace.notes],
    )
    for original, new in mapping.items():  # the places: each id and the one it became
        out.note(WARN_TOOL_IDS, MESSAGE.format(length=length), f"{original} -> {new}")
    return out


def fit(trace: Trace, model: object) -> Trace:
    """The trace as the model's prompt format takes it: its tool-call ids mapped when the format
    demands ids of one length (``ChatModel.tool_call_id_length``)."""
    length = getattr(model, "tool_call_id_length", None)
    if length:
        return fit_tool_call_ids(trace, length)
    return trace
