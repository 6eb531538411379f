"""A conversation built message by message, for the readers of agent logs that record each message
once (Gemini CLI, Qwen Code, pi): every message passes :func:`tokprof.formats.neutral.check_messages`
when it is added, and each model call's prompt is the history as it stood when the call was made.

A tool result whose call is not in the history is kept as user text (note ``orphan-tool-result``),
so that a damaged or truncated log still reads.

A reader that is a fold (:mod:`tokprof.formats.folds`) gives its calls as it makes them: its
conversations hand each call to the reader's :class:`~tokprof.formats.folds.Made`, not to
``trace.calls``, so that the trace never holds the log's calls.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tokprof.formats.folds import Made
from tokprof.formats.neutral import check_messages
from tokprof.trace import Call, PromptView, Trace, Usage

ORPHAN = "a tool result whose call is not in the history is kept as user text"
EMPTY = "a response with no recorded message before it was skipped: there is no prompt to profile"
NOT_TEXT = (
    "content that is not text (images, files, inline data) was left out of the prompt: its tokens are in "
    "the reported usage, not in the buckets"
)


class Conversation:
    """The history of one thread and the calls made on it: appended to ``trace.calls``, or handed to a
    fold's :class:`Made` when one is given."""

    def __init__(self, trace: Trace, made: Made | None = None) -> None:
        self.trace = trace
        self.made = made
        self.messages: list[dict] = []
        self.call_ids: set[str] = set()

    def _skip(self, place: str, kind: str) -> None:
        self.trace.note("content-not-text", NOT_TEXT, place)

    def check(self, message: dict, where: str) -> dict:
        """One message, checked and normalised (its tool call ids become known)."""
        if message.get("role") == "tool" and message.get("tool_call_id") not in self.call_ids:
            self.trace.note("orphan-tool-result", ORPHAN, where)
            message = {"role": "user", "content": message.get("content") or ""}
        call_id = message.get("tool_call_id")  # the one id a tool message needs: not a copy of them all per message
        known = {call_id} if isinstance(call_id, str) and call_id in self.call_ids else set()
        [clean] = check_messages(self.trace.path, f"{where}: ", [message], skip=self._skip, call_ids=known)
        for tool_call in clean.get("tool_calls") or ():
            if isinstance(tool_call.get("id"), str):
                self.call_ids.add(tool_call["id"])
        return clean

    def add(self, message: dict, where: str) -> dict:
        clean = self.check(message, where)
        self.messages.append(clean)
        return clean

    def replace(self, messages: list[dict]) -> None:
        """Start again from these (already checked) messages: a compaction, a rewind."""
        self.messages = list(messages)

    def call(
        self,
        where: str,
        model: str | None,
        usage: Usage | None,
        response: dict | None,
        time: Any,
        kind: str = "call",
        request_id: str | None = None,
    ) -> Call | None:
        """A call made on the history as it stands (None, with note ``empty-prompt``, when the history is
        empty: no request is sent without a message)."""
        if not self.messages:
            self.trace.note("empty-prompt", EMPTY, where)
            return None
        call = Call(
            index=len(self.trace.calls) if self.made is None else 0,
            messages=PromptView(self.messages, len(self.messages)),  # the history only grows at its end
            tools=None,
            model=model,
            reported=usage,
            day=time.date() if time is not None else None,
            where=where,
            response=response,
            kind=kind,
            request_id=request_id,
            time=time,
        )
        if self.made is not None:
            return self.made.add(call)
        self.trace.calls.append(call)
        return call


def finish(trace: Trace) -> Trace:
    """The trace's model: the model of most calls."""
    models = Counter(call.model for call in trace.calls if call.model)
    trace.model = models.most_common(1)[0][0] if models else None
    return trace


def function_response_text(body: Any) -> str:
    """A Gemini API ``functionResponse.response`` as the model is sent it (Gemini CLI, Qwen Code): its
    lone ``output`` string, else the object's JSON."""
    if isinstance(body, dict) and set(body) == {"output"} and isinstance(body["output"], str):
        return body["output"]
    return tool_text(body)


def tool_text(value: Any) -> str:
    """A tool's result as the model is sent it: a string as it is, else its JSON."""
    import json

    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
