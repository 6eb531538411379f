"""A model that counts one prompt at a time (:class:`Model`, :func:`get_model`) and the model a run
of a log counts with."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from threading import Lock
from typing import Any

from tokprof.attribution.attributor import Attributor, RenderError
from tokprof.attribution.buckets import BUCKETS, WARNINGS
from tokprof.base.errors import InputError
from tokprof.formats.prompts import Prompt, read_prompt
from tokprof.models import DEFAULT_MODEL
from tokprof.models.base import ChatModel, ModelInfo
from tokprof.models.loaded import chat_model
from tokprof.runs.arguments import PathLike
from tokprof.trace import Call, Note, Trace


@dataclass(frozen=True)
class Buckets:
    """Where one prompt's tokens go. The buckets are never negative and add up to :attr:`total`."""

    system: int
    tool_definitions: int
    tool_results: int
    conversation: int
    exact: bool  # False when the model is an estimate (a proxy for a closed model)
    warnings: tuple[Note, ...] = ()

    @property
    def total(self) -> int:
        return self.system + self.tool_definitions + self.tool_results + self.conversation

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in BUCKETS}


class Model:
    """A model that counts: its prompt format (a chat template) and its token counter.

    Get one with :func:`get_model`. :meth:`count` keeps what it learnt from the last prompts it
    counted, so counting a conversation again as it grows costs only what it adds.
    """

    def __init__(self, chat: ChatModel, *, keep_json: bool = False):
        """``keep_json`` (for a caller that owns the messages it counts and never changes them, as
        ``tokprof serve`` does): the JSON templates write of earlier messages is remembered from
        count to count."""
        self.chat = chat
        self._attributor: Attributor | None = None
        self._keep_json = keep_json
        self._lock = Lock()

    @property
    def name(self) -> str:
        return self.chat.name

    @property
    def exact(self) -> bool:
        """Whether counts are exact (the model's own tokenizer and template) or estimates."""
        return self.chat.exact

    @property
    def context_window(self) -> int | None:
        return self.chat.context_window

    @property
    def info(self) -> ModelInfo:
        return self.chat.describe()

    def __repr__(self) -> str:
        return f"<tokprof.Model {self.name!r}{'' if self.exact else ' (estimate)'}>"

    def count_text(self, text: str) -> int:
        """The number of tokens of a text, as it is (no chat template)."""
        if not isinstance(text, str):
            raise InputError("text", None, f"expected a string, found {type(text).__name__}")
        return self.chat.count(text)

    def count(
        self,
        messages: Sequence[dict],
        tools: Sequence[dict] | None = None,
        *,
        system: Any = None,
        date: date | None = None,
    ) -> Buckets:
        """The buckets of one prompt: ``messages`` in the Chat Completions shape (or the Anthropic
        Messages shape, with ``system`` as Anthropic's top-level system prompt), ``tools`` in any
        of the shapes :func:`read_log` takes. ``date`` pins templates that print today's date.
        Raises :class:`InputError` naming the message and field that is wrong."""
        return self.count_prompt(read_prompt(messages, tools, system=system), date=date)

    def count_prompt(self, prompt: Prompt, *, date: date | None = None) -> Buckets:
        """The buckets of a prompt already in the neutral form (:func:`read_prompt`'s): for a caller
        that converts only the messages a prompt adds to the previous one (``tokprof serve``)."""
        from tokprof.transforms import fit

        call = Call(index=0, messages=prompt.messages, tools=prompt.tools, day=date, where="request")
        one = fit(Trace(path="request", format="request", calls=[call]), self.chat)  # ids a model needs
        call = one.calls[0]
        notes = list(prompt.notes) + list(one.notes)
        with self._lock:
            if self._attributor is None:
                self._attributor = Attributor(self.chat, keep_json=self._keep_json)
            try:
                found = self._attributor.attribute(call)
            except RenderError as exc:
                raise InputError("request", None, str(exc).removeprefix("request: ")) from None
        warnings = tuple(notes) + tuple(Note(code, WARNINGS[code]) for code in found.warnings)
        return Buckets(
            found.system, found.tool_definitions, found.tool_results, found.conversation, self.exact, warnings
        )


def named_model(name: str | None, chat_template: PathLike | None, log_models: list[str | None] | None) -> ChatModel:
    """A loaded model, once per process for each name and template (:mod:`tokprof.models.loaded`)."""
    return chat_model(name, None if chat_template is None else os.fspath(chat_template), log_models)


def get_model(name: str = DEFAULT_MODEL, *, chat_template: PathLike | None = None) -> Model:
    """A model by name (``qwen2.5``, ``qwen3``, ``openai-proxy``, ``claude-proxy``, a closed model's
    name such as ``gpt-4o``), a tokenizer directory, or a Hub id from the local Hugging Face cache.
    ``chat_template`` is a Jinja file to use instead of the model's own. Raises
    :class:`ModelError` for a model that cannot be found (with the closest known name)."""
    return Model(named_model(name, chat_template, None))


def model_for_trace(trace: Trace, model: str | Model | None, chat_template: PathLike | None) -> ChatModel:
    if isinstance(model, Model):
        return model.chat
    return named_model(model, chat_template, [trace.model] + [call.model for call in trace.calls])
