"""tokprof renders exactly what transformers' apply_chat_template renders."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, train_tiny_tokenizer
from tokprof.formats import read_trace


@pytest.mark.parametrize("model_name", ["qwen2.5", "qwen3"])
def test_render_matches_transformers(model_name, request):
    transformers = pytest.importorskip("transformers")
    model = request.getfixturevalue({"qwen2.5": "qwen25", "qwen3": "qwen3"}[model_name])
    hf = transformers.PreTrainedTokenizerFast(tokenizer_object=train_tiny_tokenizer())
    hf.chat_template = model.prompt_format.source
    for path in sorted(FIXTURES.glob("good_*")):
        trace = read_trace(str(path))
        for call in trace.calls:
            messages = model.prompt_format.prepare(call.messages, model.prompt_format.shapes[0])
            ours = model.prompt_format.render(messages, call.tools, True)
            theirs = hf.apply_chat_template(
                json.loads(json.dumps(messages)), tools=call.tools, add_generation_prompt=True, tokenize=False
            )
            assert ours == theirs, f"{path.name} call {call.index}"
