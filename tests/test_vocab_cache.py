"""The tiktoken vocabulary's ranks cache: parsed once, then read back as marshal (never a pickle),
checked by its sha256, and parsed again when the entry is missing, damaged or not a dict."""

from __future__ import annotations

import base64
import hashlib
import marshal

import pytest

from tokprof.models import tiktoken_vocab

RANKS = {b"a": 0, b"b": 1, b"ab": 2, b" \xff": 3}


@pytest.fixture
def vocab(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKPROF_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "small.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(t) + b" " + str(r).encode() + b"\n" for t, r in RANKS.items()))
    return path


def _entry(tmp_path):
    (entry,) = (tmp_path / "cache" / "vocabularies").glob("small.tiktoken-*.marshal")
    return entry


def _refuse_to_parse(monkeypatch):
    def refuse(*args):
        raise AssertionError("parsed again")

    monkeypatch.setattr(tiktoken_vocab, "_parsed_ranks", refuse)


def test_ranks_are_parsed_once_then_read_from_a_marshal_entry(vocab, tmp_path, monkeypatch):
    assert tiktoken_vocab._ranks(vocab) == RANKS
    entry = _entry(tmp_path)
    assert marshal.loads(entry.read_bytes()) == RANKS
    assert not list((tmp_path / "cache" / "vocabularies").glob("*.pickle"))
    _refuse_to_parse(monkeypatch)
    assert tiktoken_vocab._ranks(vocab) == RANKS


@pytest.mark.parametrize("blob", [b"\x00damaged", marshal.dumps([1, 2, 3])], ids=["damaged", "not-a-dict"])
def test_a_bad_entry_is_parsed_again(vocab, tmp_path, blob):
    tiktoken_vocab._ranks(vocab)
    entry = _entry(tmp_path)
    entry.write_bytes(blob)
    entry.with_suffix(".sha256").write_text(hashlib.sha256(blob).hexdigest())  # even with a matching checksum
    assert tiktoken_vocab._ranks(vocab) == RANKS


def test_a_replaced_entry_is_not_used(vocab, tmp_path):
    tiktoken_vocab._ranks(vocab)
    entry = _entry(tmp_path)
    entry.write_bytes(marshal.dumps({b"z": 0}))  # its checksum no longer matches
    assert tiktoken_vocab._ranks(vocab) == RANKS


def test_an_unwritable_cache_still_gives_the_ranks(vocab, tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("TOKPROF_CACHE_DIR", str(blocked / "cache"))
    assert tiktoken_vocab._ranks(vocab) == RANKS
