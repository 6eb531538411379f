"""The fast counter (tiktoken's encoder) gives exactly the token starts of the Hugging Face tokenizer
converted from the same vocabulary, and reuses an earlier text's tokens only where that is exact."""

from __future__ import annotations

import random

import numpy as np
import pytest

from test_qwen_tokenizer import CORPUS, random_texts
from tokprof.models.counters import HFCounter

EXTRA = [
    'line one\nline two\n/path/after/newline\n  indented\n\tTabbed\n{"json": [1, 2]}\n<|im_start|>user\nhi<|im_end|>',
    "ends with newline\n",
    "\n\n\nX",
    "punctuation.\n/slash then\n.dot then\n!bang",
    "<|start|>assistant<|message|>text<|end|>\n<|reserved_200001|>",
]


@pytest.fixture(scope="module", params=["qwen2.5", "openai-proxy"])
def counters(request):
    from tokprof.models import resolve_model
    from tokprof.models.proxies import o200k_tokenizer
    from tokprof.models.qwen import QWEN2_ADDED, qwen_tokenizer

    fast = resolve_model(request.param).counter
    converted = qwen_tokenizer(QWEN2_ADDED)[0] if request.param == "qwen2.5" else o200k_tokenizer()
    return fast, HFCounter(converted, "converted")


def test_token_starts_match_the_converted_tokenizer(counters):
    fast, reference = counters
    for text in CORPUS + random_texts(120) + EXTRA:
        assert np.array_equal(fast.token_starts(text), reference._encode_starts(text)), text
        assert fast.count(text) == reference.count(text)


def test_reuse_is_exact(counters):
    fast, reference = counters
    rng = random.Random(11)
    pieces = CORPUS + EXTRA + ["\n", "\nA", "\n/", " x", "é", "<|im_end|>", "<|end|>", "\n\n", "}\n"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(150)]
    fast.token_starts_reusing(texts[0], fast.token_starts_reusing(texts[1], None, 0), 0)  # the first-use check
    for old, suffix in zip(texts, texts[1:]):
        new = old[: rng.randint(0, len(old))] + suffix  # a text that shares a prefix with old, as prompts do
        common = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
        previous = fast.token_starts_reusing(old, None, 0)
        starts, _ = fast.token_starts_reusing(new, previous, common)
        assert np.array_equal(starts, reference._encode_starts(new)), (old, new)


#: Pieces with no newline, so that a space after an ASCII letter is the only split point between
#: added tokens: the texts around it vary what comes before and after (contractions, digits,
#: runs of spaces, punctuation, letters outside ASCII, marks).
FLAT = [
    "word",
    " ",
    "  ",
    "x",
    "I",
    "'ll",
    "'s",
    "'",
    "123",
    "4",
    ".",
    ", ",
    "é",
    "e\u0301",
    "Ω",
    "你",
    "-",
    "!?",
    "\t",
]


def test_a_space_after_a_letter_splits_every_text_alike(counters):
    """#43.5: the split point of texts with no newline (counters.last_word_end): the tokens of a text
    that shares its first characters with another, reused up to the last space after an ASCII letter
    before they part, and the shared end of count_like, are the converted tokenizer's."""
    from tokprof.models.counters import first_word_end, last_word_end

    fast, reference = counters
    rng = random.Random(43)
    texts = ["".join(rng.choice(FLAT) for _ in range(rng.randint(1, 60))) for _ in range(120)]
    fast.token_starts_reusing(texts[0], fast.token_starts_reusing(texts[1], None, 0), 0)  # the first-use check
    assert fast.boundary_after_newline and fast._word_ends
    cuts = 0
    for old, suffix in zip(texts, texts[1:]):
        new = old[: rng.randint(0, len(old))] + suffix
        common = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
        cuts += bool(last_word_end(new, 1, common))
        starts, _ = fast.token_starts_reusing(new, fast.token_starts_reusing(old, None, 0), common)
        assert np.array_equal(starts, reference._encode_starts(new)), (old, new)
        point = first_word_end(old, 1, len(old))
        if point is not None:  # a token starts there, and the tokens from there on are the end's, whatever precedes
            other = "".join(rng.choice(FLAT) for _ in range(5)) + old[point - 1 :]
            at = len(other) - (len(old) - point)
            whole = reference._encode_starts(other)
            assert at in whole and np.array_equal(whole[whole >= at] - at, reference._encode_starts(old[point:]))
        like = suffix + old
        assert fast.count_like(like, old, reference._encode_starts(old)) == reference.count(like), (like, old)
    assert cuts > 20  # many pairs reuse tokens up to such a point


def test_text_that_nfc_changes_goes_to_the_converted_tokenizer():
    from tokprof.models import resolve_model

    fast = resolve_model("qwen2.5").counter
    text = "combining e\u0301 and A\u030a, then more"
    starts = fast.token_starts(text)
    assert len(starts) == fast.count(text) and starts[0] == 0
    assert fast.fallback is not None and np.array_equal(starts, fast.fallback.token_starts(text))


@pytest.mark.parametrize("name", ["qwen2.5", "openai-proxy", "claude-proxy"])
def test_catalogue_costs_are_those_of_whole_renders(name, monkeypatch):
    """The catalogue's costs, counting only the part of a render that differs from the whole
    catalogue's, equal the costs of tokenizing every render whole."""
    from tokprof.analyses import tools as analysis
    from tokprof.models import resolve_model

    model = resolve_model(name)
    rng = random.Random(5)
    words = ["fetch", "the", "data", "\n", "/path", "Returns:", "a", "list", "of", "records.", "é", "{x}", "\nNote"]
    catalogue = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": " ".join(rng.choice(words) for _ in range(rng.randint(0, 30))),
                "parameters": {
                    "type": "object",
                    "properties": {
                        f"p{j}": {"type": "string", "description": rng.choice(words)} for j in range(rng.randint(0, 4))
                    },
                },
            },
        }
        for i in range(15)
    ]
    fast = analysis.catalogue_cost(model, catalogue, "You are a test bot.", called={"tool_1"})
    monkeypatch.setattr(analysis, "count_like", lambda counter, text, *reference: counter.count(text))
    plain = analysis.catalogue_cost(model, catalogue, "You are a test bot.", called={"tool_1"})
    assert fast == plain


def test_a_run_of_millions_of_blanks_is_one_line(tmp_path, capsys):
    """#33: tokenizers' patterns backtrack over a long run of one white-space character (Hugging Face's
    aborted the process on 12 million spaces): over LONGEST_BLANK_RUN it is a one-line error."""
    import json as _json

    from conftest import FIXTURES
    from tokprof.frontends.cli import main
    from tokprof.base.errors import ModelError
    from tokprof.models.counters import LONGEST_BLANK_RUN, check_blank_runs

    check_blank_runs("a" + " " * LONGEST_BLANK_RUN + "b", "test")  # at the limit: counted
    with pytest.raises(ModelError, match="a run of over"):
        check_blank_runs("a" + "\n" * (LONGEST_BLANK_RUN + 1), "test")
    log = _json.loads((FIXTURES / "good_transcript.json").read_text())
    user = next(m for m in log["messages"] if m["role"] == "user")
    user["content"] = "look" + " " * (LONGEST_BLANK_RUN + 10) + "here"
    path = tmp_path / "spaces.json"
    path.write_text(_json.dumps(log))
    assert main(["profile", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("tokprof: error: ") and "a run of over 2,000,000 ' ' characters" in err and err.count("\n") == 1
    )
