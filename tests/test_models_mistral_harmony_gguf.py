"""The embedded Mistral and gpt-oss models and GGUF files:

* a Mistral prompt is counted with mistral-common's own tokens however many renders (and threads)
  came between its render and its count;
* gpt-oss prompts are harmony's render whatever was rendered before, and are counted with harmony's
  own tokens (a special token's name inside a message is plain text there);
* a malformed GGUF file is a :class:`tokprof.base.errors.ModelError` naming the file and what is wrong.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tokprof import get_model
from tokprof.base.errors import ModelError
from tokprof.models import resolve_model

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get",
            "description": "d",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]


def _mistral_conversation(turns: int, tag: str = "") -> list[dict]:
    messages = []
    for i in range(turns):
        messages.append({"role": "user", "content": f"{tag}question {i} literal [INST] text </s> [TOOL_RESULTS]"})
        messages.append({"role": "assistant", "content": f"answer {i}"})
    messages.append({"role": "user", "content": "last one"})
    return messages


# -- Mistral: the count of a render is mistral-common's, however many renders came between ---------
@pytest.mark.parametrize("name", ["mistral", "mistral-large"])
def test_mistral_long_conversation_counts_the_reference_tokens(name):
    """30 turns render more than 16 probes between the full render and its count."""
    model = get_model(name)
    prompt_format = model.chat.prompt_format
    messages = _mistral_conversation(30)
    assert model.count(messages, TOOLS).total == len(prompt_format.tokens(messages, TOOLS))


def test_mistral_render_counted_after_other_renders():
    model = resolve_model("mistral")
    prompt_format = model.prompt_format
    messages = _mistral_conversation(3)
    text = prompt_format.render(messages, TOOLS, True)
    for k in range(40):  # other conversations rendered before this one is counted
        prompt_format.render(_mistral_conversation(2, f"other {k} "), TOOLS, True)
    assert model.counter.count(text) == len(prompt_format.tokens(messages, TOOLS))


def test_mistral_counts_in_threads_are_the_references():
    from tokprof.frontends.serve import ConversationCache, Counter, Models

    counter = Counter(Models(["mistral"]), ConversationCache())
    prompt_format = resolve_model("mistral").prompt_format
    conversations = {k: _mistral_conversation(6, f"conv {k} ") for k in range(16)}
    reference = {k: len(prompt_format.tokens(m, TOOLS)) for k, m in conversations.items()}

    def count(k):
        answer, _ = counter.count("count", json.dumps({"messages": conversations[k], "tools": TOOLS}).encode())
        return k, answer["total"]

    with ThreadPoolExecutor(4) as pool:
        found = dict(pool.map(count, range(16)))
    assert found == reference


# -- gpt-oss: harmony's render and harmony's tokens ------------------------------------------------
def _call(i: str, q: str) -> dict:
    return {"id": i, "type": "function", "function": {"name": "get", "arguments": json.dumps({"q": q})}}


REASONING = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "reasoning_content": "think", "content": "ans"},
    {"role": "user", "content": "more"},
    {"role": "assistant", "reasoning_content": "t3", "content": None, "tool_calls": [_call("b", "y")]},
    {"role": "tool", "tool_call_id": "b", "content": "r"},
]


def _harmony_text(prompt_format, messages, tools, generation=True) -> str:
    from tokprof.models.harmony import harmony_encoding

    return harmony_encoding().decode_utf8(prompt_format.tokens(messages, tools, generation))


def test_gpt_oss_keeps_the_analysis_harmony_keeps_after_a_simple_count():
    """harmony drops analysis messages only when the last assistant message is final; a simple
    conversation counted first does not make later renders trust the fast path."""
    model = get_model("gpt-oss")
    prompt_format = model.chat.prompt_format
    model.count(
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}, {"role": "user", "content": "x"}]
    )
    assert model.count(REASONING, TOOLS).total == len(prompt_format.tokens(REASONING, TOOLS, True))
    assert prompt_format.render(REASONING, TOOLS, True) == _harmony_text(prompt_format, REASONING, TOOLS)


@pytest.mark.parametrize(
    "tail",
    [
        [],  # ends with a tool result: nothing is dropped
        [
            {"role": "assistant", "reasoning_content": "a2", "content": "f2"}
        ],  # ends final: analysis before the first final dropped
        [{"role": "assistant", "reasoning_content": "a2", "content": "f2"}, {"role": "user", "content": "u3"}],
    ],
)
def test_gpt_oss_renders_every_shape_as_harmony(tail):
    from tokprof.models.harmony import HarmonyFormat

    prompt_format = HarmonyFormat()
    prompt_format.render([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], TOOLS, True)
    messages = REASONING + tail
    for generation in (True, False):
        assert prompt_format.render(messages, TOOLS, generation) == _harmony_text(
            prompt_format, messages, TOOLS, generation
        )


@pytest.mark.parametrize("content", ["text <|end|> more <|start|>user<|message|>x", "<|endoftext|> <|return|>"])
def test_gpt_oss_counts_special_token_names_in_messages_as_harmony_encodes_them(content):
    model = get_model("gpt-oss")
    prompt_format = model.chat.prompt_format
    messages = [{"role": "system", "content": "be nice"}, {"role": "user", "content": content}]
    reference = prompt_format.tokens(messages, TOOLS, True)
    text = prompt_format.render(messages, TOOLS, True)
    assert model.chat.counter.count(text) == len(reference)
    assert model.count(messages, TOOLS).total == len(reference)


# -- GGUF: a malformed file is a ModelError ------------------------------------------------------
def _write(path: Path, types: list[int], merges: list[str]) -> Path:
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("llama-bpe")
    writer.add_token_list(["a", "b", "ab", "<s>", "</s>"])
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(3)
    writer.add_chat_template("{% for m in messages %}{{ m.content }}{% endfor %}")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.parametrize(
    "types, merges, says",
    [
        ([1, 1], ["a b"], "token_type"),  # fewer types than tokens
        ([1, 1, 1, 3, 3], ["ab"], "merges"),  # a merge without a space
        ([1, 1, 1, 3, 3], ["a c"], "merges"),  # a merge of a token the vocabulary lacks
        ([1, 1, 1, 3, 3], ["b b"], "merges"),  # a merge whose result the vocabulary lacks
    ],
)
def test_malformed_gguf_is_a_model_error(tmp_path, types, merges, says):
    path = _write(tmp_path / "bad.gguf", types, merges)
    with pytest.raises(ModelError) as raised:
        resolve_model(str(path))
    message = str(raised.value)
    assert str(path) in message and says in message and "\n" not in message


def test_wellformed_tiny_gguf_still_loads(tmp_path):
    model = resolve_model(str(_write(tmp_path / "good.gguf", [1, 1, 1, 3, 3], ["a b"])))
    assert model.count("ab") == 1


def test_malformed_gguf_on_the_command_line_is_one_line(tmp_path, capsys):
    from tokprof.frontends.cli import main

    root = Path(__file__).resolve().parents[1]
    path = _write(tmp_path / "bad.gguf", [1, 1], ["a b"])
    assert main(["profile", str(root / "samples" / "incident_session.json"), "--model", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1 and "bad.gguf" in err
