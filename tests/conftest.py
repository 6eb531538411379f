"""Shared fixtures: a tiny word-level tokenizer trained at test time, a ChatML-style template, logs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from tokprof.models.base import ChatModel
from tokprof.models.counters import HFCounter
from tokprof.models.template import ChatTemplate

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parent.parent

# A ChatML-style template that renders tools, tool calls and tool messages. Every piece of text is
# written with explicit strings so that the tests can count its tokens by hand.
CHATML = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content }}{%- endif %}"
    "{{- '\\nTools:\\n' }}"
    "{%- for t in tools %}{{- t.function.name + ': ' + t.function.description + '\\n' }}{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for m in messages %}"
    "{%- if not (m.role == 'system' and loop.first) %}"
    "{{- '<|im_start|>' + m.role + '\\n' }}"
    "{%- if m.content %}{{- m.content }}{%- endif %}"
    "{%- for c in m.tool_calls or [] %}{{- 'call ' + c.function.name + ' ' + (c.function.arguments | tojson) }}{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

CORPUS = [
    "You are a test bot . define cat dog word lookup Look up a is an animal",
    "system user assistant tool call Tools",
]


def train_tiny_tokenizer() -> Tokenizer:
    """A word-level tokenizer: one token per word, per run of punctuation, and per special token."""
    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=["[UNK]", "<|im_start|>", "<|im_end|>"])
    tokenizer.train_from_iterator(CORPUS, trainer)
    return tokenizer


def tiny_model(template: str | dict = CHATML) -> ChatModel:
    return ChatModel(
        name="tiny",
        prompt_format=ChatTemplate(source=template, origin="test"),
        counter=HFCounter(train_tiny_tokenizer(), "trained at test time"),
    )


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    """Converted tokenizers go to a cache of the test run's own, never the user's."""
    if "TOKPROF_CACHE_DIR" not in os.environ:
        os.environ["TOKPROF_CACHE_DIR"] = str(tmp_path_factory.mktemp("tokprof-cache"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    yield


@pytest.fixture(scope="session")
def qwen25():
    from tokprof.models import resolve_model

    return resolve_model("qwen2.5")


@pytest.fixture(scope="session")
def qwen3():
    from tokprof.models import resolve_model

    return resolve_model("qwen3")


def write_json(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look up a word.",
        "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    },
}


def small_transcript(system: bool = True, tools: bool = True) -> dict:
    messages = []
    if system:
        messages.append({"role": "system", "content": "You are a test bot."})
    messages += [
        {"role": "user", "content": "define cat"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"word": "cat"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "cat is an animal"},
        {"role": "assistant", "content": "A cat is an animal."},
    ]
    out = {"model": "test", "messages": messages}
    if tools:
        out["tools"] = [WEATHER_TOOL]
    return out


@pytest.fixture
def model_dir(tmp_path) -> Path:
    """A model directory with the tiny tokenizer and the ChatML-style template, for ``--model``."""
    target = tmp_path / "model"
    target.mkdir()
    train_tiny_tokenizer().save(str(target / "tokenizer.json"))
    write_json(target / "tokenizer_config.json", {"chat_template": CHATML, "eos_token": "<|im_end|>"})
    return target


def profile_json(args: list[str], capsys) -> dict:
    """Run ``tokprof profile ARGS -f json``, check it succeeded and every call's buckets, return the JSON."""
    from tokprof.frontends.cli import main

    code = main(["profile", *args, "-f", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    for call in doc["calls"]:
        assert all(value >= 0 for value in call["buckets"].values())
        assert sum(call["buckets"].values()) == call["total"]
    return doc
