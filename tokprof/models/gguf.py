"""Models from a GGUF file (``--model PATH.gguf``) or Ollama's model folder (``--model NAME[:TAG]``): the
tokenizer and chat template read from the file's metadata with the ``gguf`` package (no tensor loaded),
a byte-level BPE tokenizer built from it. docs/models.md says what is read and what is refused."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from tokprof.base.errors import ModelError
from tokprof.models.base import ChatModel

#: Token types of ``tokenizer.ggml.token_type`` (llama.cpp's ``llama_token_type``).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
    r"\s+(?!\S)|\s+"
)
_QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"
    r"\s+(?!\S)|\s+"
)
_QWEN35 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)
_O200K = "|".join(
    [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)
_TEKKEN = "|".join(
    [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*",
        r"\p{N}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)
#: ``tokenizer.ggml.pre`` -> the pre-tokenizer pattern llama.cpp uses for it (llama-vocab.cpp).
PRE_TOKENIZERS = {
    "default": _GPT2,
    "gpt2": _GPT2,
    "llama3": _LLAMA3,
    "llama-v3": _LLAMA3,
    "llama-bpe": _LLAMA3,
    "smaug-bpe": _LLAMA3,
    "qwen2": _QWEN2,
    "deepseek-r1-qwen": _QWEN2,
    "megrez": _QWEN2,
    "qwen35": _QWEN35,
    "gpt-4o": _O200K,
    "llama4": _O200K,
    "tekken": _TEKKEN,
}


def _field(reader, key: str, default=None):
    field = reader.fields.get(key)
    if field is None:
        return default
    value = field.contents()
    return default if value is None else value


def read_gguf(path: Path) -> dict:
    """The tokenizer metadata of a GGUF file (see the module's docstring)."""
    try:
        from gguf import GGUFReader
    except ImportError:
        raise ModelError("reading GGUF files needs the gguf package (pip install gguf)") from None
    try:
        reader = GGUFReader(str(path), "r")
    except Exception as exc:  # the reader raises ValueError, struct errors, ...
        raise ModelError(f"{path}: not a GGUF file tokprof can read ({type(exc).__name__}: {exc})") from None
    return {
        "model": _field(reader, "tokenizer.ggml.model"),
        "pre": _field(reader, "tokenizer.ggml.pre", "default"),
        "tokens": _field(reader, "tokenizer.ggml.tokens"),
        "merges": _field(reader, "tokenizer.ggml.merges", []),
        "types": _field(reader, "tokenizer.ggml.token_type"),
        "bos": _field(reader, "tokenizer.ggml.bos_token_id"),
        "eos": _field(reader, "tokenizer.ggml.eos_token_id"),
        "template": _field(reader, "tokenizer.chat_template"),
        "context": next((_field(reader, k) for k in reader.fields if k.endswith(".context_length")), None),
    }


def gguf_tokenizer(meta: dict, where: str):
    """A Hugging Face tokenizer from a GGUF file's ``gpt2`` tokenizer metadata."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    if meta["model"] != "gpt2":
        raise ModelError(
            f"{where}: tokenizer.ggml.model is {meta['model']!r}; tokprof reads byte-level BPE (gpt2) "
            "GGUF tokenizers only"
        )
    tokens = meta["tokens"]
    if not tokens:
        raise ModelError(f"{where}: no tokenizer.ggml.tokens")
    pattern = PRE_TOKENIZERS.get(meta["pre"])
    if pattern is None:
        raise ModelError(
            f"{where}: tokenizer.ggml.pre {meta['pre']!r} is not one tokprof knows ("
            f"{', '.join(sorted(PRE_TOKENIZERS))})"
        )
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise ModelError(f"{where}: tokenizer.ggml.tokens is not a list of strings")
    types = meta["types"] or [NORMAL] * len(tokens)
    if not isinstance(types, list) or len(types) != len(tokens) or not all(isinstance(t, int) for t in types):
        raise ModelError(
            f"{where}: tokenizer.ggml.token_type has {len(types) if isinstance(types, list) else 'no'} "
            f"integer types for {len(tokens)} tokens"
        )
    vocab = {token: i for i, token in enumerate(tokens)}
    merges = []
    for n, merge in enumerate(meta["merges"] or []):
        pair = merge.split(" ", 1) if isinstance(merge, str) else []
        if len(pair) != 2 or not all(pair) or pair[0] + pair[1] not in vocab or not all(p in vocab for p in pair):
            raise ModelError(
                f"{where}: tokenizer.ggml.merges entry {n} ({merge!r}) is not two tokens of the "
                "vocabulary, separated by a space, that make a token of it"
            )
        merges.append((pair[0], pair[1]))
    try:
        tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=False, fuse_unk=False))
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
            ]
        )
        tokenizer.decoder = decoders.ByteLevel()
        added = [
            AddedToken(tokens[i], special=types[i] == CONTROL, normalized=False)
            for i in range(len(tokens))
            if types[i] in (CONTROL, USER_DEFINED)
        ]
        tokenizer.add_tokens(added)
    except BaseException as exc:  # tokenizers raises Exception, or its Rust panics (a BaseException)
        if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
            raise
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ModelError(f"{where}: the tokenizer cannot be built ({type(exc).__name__}: {message})") from None
    return tokenizer


def load_gguf(path: Path, name: str | None = None, origin: str | None = None) -> ChatModel:
    """A model from a GGUF file: its tokenizer and chat template."""
    from tokprof.models.counters import HFCounter
    from tokprof.models.template import ChatTemplate

    where = origin or str(path)
    meta = read_gguf(path)
    tokenizer = gguf_tokenizer(meta, where)
    special = {}
    for key, index in (("bos_token", meta["bos"]), ("eos_token", meta["eos"])):
        if isinstance(index, int) and 0 <= index < len(meta["tokens"]):
            special[key] = meta["tokens"][index]
    source = meta["template"]
    template = ChatTemplate(
        source=source if isinstance(source, str) else "",
        origin=f"gguf:{Path(path).name}" if source else "none",
        special_tokens=special,
    )
    window = meta["context"]
    return ChatModel(
        name=name or str(path),
        prompt_format=template,
        counter=HFCounter(tokenizer, f"gguf:{Path(path).name} (tokenizer.ggml, pre {meta['pre']})"),
        context_window=int(window) if isinstance(window, int) and 0 < window < 10**8 else None,
    )


def looks_like_gguf(name: str) -> bool:
    return name.lower().endswith(".gguf")


# -- Ollama --------------------------------------------------------------------------------------
MODEL_LAYER = "application/vnd.ollama.image.model"
_OLLAMA_NAME = re.compile(
    r"^(?:(?P<host>[\w.-]+\.[\w.-]+(?::\d+)?)/)?(?:(?P<ns>[\w.-]+)/)?(?P<name>[\w.-]+)(?::(?P<tag>[\w.-]+))?$"
)


def ollama_models() -> Path:
    """Ollama's model folder: ``$OLLAMA_MODELS``, else ``~/.ollama/models``."""
    explicit = os.environ.get("OLLAMA_MODELS")
    return Path(explicit).expanduser() if explicit else Path.home() / ".ollama" / "models"


def ollama_blob(name: str) -> Path | None:
    """The GGUF blob of an Ollama model name (``NAME[:TAG]``, ``NAMESPACE/NAME[:TAG]``, or with a
    registry host), when Ollama's folder has its manifest; None when it does not."""
    found = _OLLAMA_NAME.match(name)
    root = ollama_models()
    if found is None or not (root / "manifests").is_dir():
        return None
    host = found.group("host") or "registry.ollama.ai"
    manifest = (
        root
        / "manifests"
        / host
        / (found.group("ns") or "library")
        / found.group("name")
        / (found.group("tag") or "latest")
    )
    if not manifest.is_file():
        return None
    try:
        layers = json.loads(manifest.read_text(encoding="utf-8")).get("layers") or []
    except (OSError, ValueError) as exc:
        raise ModelError(f"{manifest}: not an Ollama manifest ({exc})") from None
    digest = next((layer.get("digest") for layer in layers if layer.get("mediaType") == MODEL_LAYER), None)
    if not isinstance(digest, str) or not re.fullmatch(r"sha256[:-][0-9a-f]{64}", digest):
        raise ModelError(f"{manifest}: no model layer ({MODEL_LAYER})")
    blob = root / "blobs" / digest.replace(":", "-")
    if not blob.is_file():
        raise ModelError(f"Ollama model {name}: its model blob {blob} is missing (ollama pull {name})")
    return blob
