"""tokprof against the plain reference implementation (benchmarks/reference.py), call by call.

The reference renders and tokenizes every call from scratch; tokprof reuses what it knows from earlier
calls. They must agree exactly on every template, including templates whose render of a longer
conversation does not start with the render of a shorter one (they rewrite earlier turns).
"""

from __future__ import annotations

import copy
import json
import sys

import pytest

from conftest import CHATML, ROOT, tiny_model
from tokprof.attribution.attributor import Attributor
from tokprof.formats import read_trace

sys.path.insert(0, str(ROOT / "benchmarks"))
from generate_session import records, session  # noqa: E402
from reference import Reference  # noqa: E402

# Tool results older than the last two messages are shown as "[old result]": each call rewrites an
# earlier turn.
REWRITING = (
    "{%- for m in messages %}"
    "{{- '<|im_start|>' + m.role + '\\n' }}"
    "{%- if m.role == 'tool' and loop.index0 < (messages | length) - 2 %}{{- '[old result]' }}"
    "{%- else %}{{- m.content or '' }}{%- endif %}"
    "{%- for c in m.tool_calls or [] %}{{- 'call ' + c.function.name + ' ' + (c.function.arguments | tojson) }}{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
# The first line counts the messages, and every header says how far back its message is: no two
# calls' renders share more than a few characters.
COUNTING = (
    "{{- 'system ' + (messages | length | string) + '\\n' }}"
    "{%- if tools %}{{- 'Tools:\\n' }}{%- for t in tools %}{{- t.function.name + '\\n' }}{%- endfor %}{%- endif %}"
    "{%- for m in messages %}"
    "{{- '<|im_start|>' + m.role + ' ' + ((messages | length) - loop.index0) | string + '\\n' + (m.content or '') }}"
    "{%- for c in m.tool_calls or [] %}{{- 'call ' + c.function.name }}{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
# The generation prompt is not simply written last: the last message is closed differently with it.
GENERATION_INSIDE = (
    "{%- for m in messages %}"
    "{{- '<|im_start|>' + m.role + '\\n' + (m.content or '') }}"
    "{%- for c in m.tool_calls or [] %}{{- 'call ' + c.function.name }}{%- endfor %}"
    "{%- if loop.last and not add_generation_prompt %}{{- '<|im_end|>' }}{%- else %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
# Hermes style: tool_use prints a preamble even for tools=[] and fails on None.
HERMES = {
    "default": CHATML,
    "tool_use": CHATML.replace("{{- '\\nTools:\\n' }}", "{{- '\\nUse functions . Tools:\\n' }}").replace(
        "{%- if tools %}", "{%- if tools is not none %}{%- for t in tools %}{%- endfor %}"
    ),
}
# Reads the tools in every message header, and sets a variable from them first.
TOOLS_EVERYWHERE = "{%- set count = (tools | length) if tools else 0 %}" + CHATML.replace(
    "{{- '<|im_start|>' + m.role + '\\n' }}", "{{- '<|im_start|>' + m.role + ' ' + (count | string) + '\\n' }}"
)
# Trims content and concatenates arguments as a string (parsed arguments fail: the API shape is used).
TRIMMING = CHATML.replace("{{- m.content }}", "{{- m.content | trim }}").replace(
    "(c.function.arguments | tojson)", "c.function.arguments"
)


def write_session(tmp_path, calls=12, size=160, tools=3, seed=5, form="transcript", think=False):
    doc = session(calls, size, tools, seed)
    if think:  # reasoning in assistant turns: Qwen3 drops it from turns before the last user message
        for i, m in enumerate(doc["messages"]):
            if m["role"] == "assistant":
                m["content"] = f"<think>\nstep {i} of the plan\n</think>\n\n" + (m["content"] or "")
    path = tmp_path / ("s.json" if form == "transcript" else "s.jsonl")
    if form == "transcript":
        path.write_text(json.dumps(doc), encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in records(doc)), encoding="utf-8")
    return path


def interleaved(tmp_path, seed=9):
    """Two conversations taking turns, and a call that edits an earlier message of its conversation."""
    main = records(session(8, 120, 2, seed))
    sub = records(session(6, 90, 2, seed + 1))
    sub[0]["messages"][0]["content"] = "You are a subagent. " + sub[0]["messages"][0]["content"]
    for r in sub:
        r["messages"][0] = sub[0]["messages"][0]
    lines = []
    for i in range(max(len(main), len(sub))):
        lines += main[i : i + 1] + sub[i : i + 1]
    edited = copy.deepcopy(main[5])
    edited["messages"][2]["content"] = "an edited message"
    lines.insert(9, edited)
    path = tmp_path / "interleaved.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    return path


def assert_agree(model, path):
    trace = read_trace(str(path))
    reference = Reference(model)
    both = [Attributor(model, incremental=True), Attributor(model, incremental=False)]  # spliced and whole
    for call in trace.calls:
        want = reference.attribute(call)
        for attributor in both:
            got = attributor.attribute(call)
            assert (got.as_dict(), got.warnings, got.spans) == (want.as_dict(), want.warnings, want.spans), (
                call.where,
                attributor.incremental,
            )
    return trace


@pytest.mark.parametrize(
    "template",
    [CHATML, REWRITING, COUNTING, GENERATION_INSIDE, HERMES, TRIMMING, TOOLS_EVERYWHERE],
    ids=[
        "chatml",
        "rewriting",
        "counting",
        "generation-inside",
        "hermes",
        "trimming-string-arguments",
        "tools-everywhere",
    ],
)
@pytest.mark.parametrize("form", ["transcript", "records"])
def test_tiny_templates(template, form, tmp_path):
    assert_agree(tiny_model(template), write_session(tmp_path, form=form))


def test_template_forms(qwen25, qwen3):
    """The shortcuts the templates' forms allow (generation prompt written last, tools read in a head
    of their own) are taken for the embedded templates, and refused where they would not hold."""
    from tokprof.models.template import ChatTemplate

    for model in (qwen25, qwen3):
        assert model.prompt_format.generation_is_suffix(True) and model.prompt_format.tools_head(True)
    assert ChatTemplate(CHATML, "t").tools_head(True)
    assert not ChatTemplate(TOOLS_EVERYWHERE, "t").tools_head(True)
    assert not ChatTemplate(GENERATION_INSIDE, "t").generation_is_suffix(True)
    assert not ChatTemplate(
        "{% if add_generation_prompt %}{{ messages | length }}{% endif %}", "t"
    ).generation_is_suffix(True)


def test_rewriting_template_really_rewrites(tmp_path):
    """The differential test covers a template whose longer render does not extend the shorter one."""
    model = tiny_model(REWRITING)
    trace = read_trace(str(write_session(tmp_path)))

    renders = [
        model.prompt_format.render(
            model.prompt_format.prepare(c.messages, model.prompt_format.shapes[0]), c.tools, False
        )
        for c in trace.calls
    ]
    assert any(not later.startswith(earlier) for earlier, later in zip(renders, renders[1:]))


@pytest.mark.parametrize("template", [CHATML, REWRITING])
def test_blank_and_missing_content(template, tmp_path):
    """Calls with nothing to mark (markers used, no spans), blank content, and no messages at all."""
    messages = [
        {"role": "user", "content": ""},
        {"role": "assistant", "content": "  "},
        {"role": "user", "content": "\n"},
        {"role": "assistant", "content": "a cat"},
        {"role": "user", "content": "word"},
        {"role": "assistant", "content": ""},
    ]
    path = tmp_path / "blank.json"
    path.write_text(json.dumps({"model": "t", "messages": messages}), encoding="utf-8")
    assert_agree(tiny_model(template), path)


def test_interleaved_conversations(tmp_path):
    assert_agree(tiny_model(), interleaved(tmp_path))
    assert_agree(tiny_model(REWRITING), interleaved(tmp_path))


@pytest.mark.parametrize("form", ["transcript", "records"])
def test_qwen25(qwen25, form, tmp_path):
    assert_agree(qwen25, write_session(tmp_path, form=form))


def test_qwen3_rewrites_reasoning(qwen3, tmp_path):
    """Qwen3 drops the reasoning of turns before the last user message, and renders the last
    assistant message differently: both kinds of rewriting, on a real template."""
    assert_agree(qwen3, write_session(tmp_path, calls=14, think=True))


def test_qwen25_interleaved(qwen25, tmp_path):
    assert_agree(qwen25, interleaved(tmp_path))


def test_prefix_renders_grow_with_the_log(tmp_path, monkeypatch):
    """A call that extends the last one renders only its new prefixes, not all of them again."""
    model = tiny_model()
    trace = read_trace(str(write_session(tmp_path, calls=30)))
    attributor = Attributor(model)
    rendered = []
    original = attributor._prefix
    monkeypatch.setattr(attributor, "_prefix", lambda messages, k, *a: rendered.append(k) or original(messages, k, *a))
    for call in trace.calls:
        attributor.attribute(call)
    assert len(rendered) <= 2 * len(trace.calls[-1].messages) + 2


# -- the pieces the reuse rests on ------------------------------------------------------------------
def common(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_follow_is_exact_or_unknown():
    """_follow(cp(X, old), len(X), cp(old, new)) is cp(X, new) or None, never a wrong number."""
    import random

    from tokprof.attribution.attributor import _follow

    rng = random.Random(1)
    told = 0
    for _ in range(3000):
        old, new, x = ("".join(rng.choice("ab") for _ in range(rng.randint(0, 6))) for _ in range(3))
        found = _follow(common(x, old), len(x), common(old, new))
        assert found is None or found == common(x, new), (x, old, new)
        told += found is not None
    assert told > 1500


def test_unmark_matching_reuses_exactly():
    import random

    from tokprof.attribution.markers import CLOSE, OPEN_BASE, common_marked, unmark, unmark_matching

    rng = random.Random(2)

    def marked(parts):
        return "".join(chr(OPEN_BASE + i) + p + CLOSE + rng.choice(["", "x", "\n"]) for i, p in parts)

    for _ in range(500):
        parts = [(i, "".join(rng.choice("ab ") for _ in range(rng.randint(0, 4)))) for i in range(rng.randint(0, 5))]
        old = marked(parts)
        cut = rng.randint(0, len(parts))
        new = old[: rng.randint(0, len(old))] if rng.random() < 0.3 else marked(parts[:cut]) + marked(parts[cut:])
        if rng.random() < 0.2:
            new += chr(OPEN_BASE + 9)  # unpaired
        old_plain, old_spans = unmark(old)
        positions = [i for i, ch in enumerate(old) if ch == CLOSE or ord(ch) >= OPEN_BASE]
        previous = (old_plain, old_spans, positions)
        assert common_marked(old_plain, old_spans, positions, new) == common(old, new)
        direct = unmark(new)
        for full in ([direct[0]] if direct else []) + [old_plain, "zz"]:
            got = unmark_matching(new, full, previous, common(old_plain, full))
            want = direct[1] if direct is not None and direct[0] == full else None
            assert (got[0] if got else None) == want


@pytest.mark.parametrize("name", ["tiny", "qwen2.5"])
def test_token_starts_reusing_matches_whole_text(name, request):
    import random

    import numpy as np

    from reference import hf_tokenizer

    model = tiny_model() if name == "tiny" else request.getfixturevalue("qwen25")
    tokenizer = hf_tokenizer(model)
    rng = random.Random(3)
    pieces = ["<|im_start|>", "<|im_end|>", "user", "\n", " cat", "dog", "word ", "  ", "<|im_", "end|>", "tool"]
    model.counter.token_starts("warm up: the first use checks against the whole text")
    for _ in range(300):
        old = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        new = old[: rng.randint(0, len(old))] + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        previous = model.counter.token_starts_reusing(old, None, 0)
        starts, added = model.counter.token_starts_reusing(new, previous, common(old, new))
        whole = [s for s, _ in tokenizer.encode(new, add_special_tokens=False).offsets]
        assert np.array_equal(starts, np.array(whole, dtype=np.int64)), (old, new)
        if name == "tiny":  # the Hugging Face counter also keeps where its added tokens are
            assert np.array_equal(added, model.counter._scan(new, 0)[1])


def test_clamp_matches_reference():
    import random

    import numpy as np

    from reference import clamp
    from tokprof.attribution.attributor import _clamp

    rng = random.Random(4)
    for _ in range(2000):
        n = rng.randint(1, 6)
        b = sorted(rng.randint(0, 40) for _ in range(n + 1))
        spans, at = [], 0
        for _ in range(rng.randint(0, 6)):
            start = at + rng.randint(0, 6)
            at = start + rng.randint(0, 6)
            spans.append((start, at, rng.randrange(n)))
        table = np.asarray(spans, dtype=np.int64).reshape(-1, 3)
        assert _clamp(b, table, n) == clamp(b, spans, n), (b, spans, n)


@pytest.mark.parametrize(
    "template",
    [CHATML, REWRITING, COUNTING, GENERATION_INSIDE, HERMES, TRIMMING, TOOLS_EVERYWHERE],
    ids=["chatml", "rewriting", "counting", "generation-inside", "hermes", "trimming", "tools-everywhere"],
)
@pytest.mark.parametrize("think", [False, True], ids=["plain", "think"])
def test_fresh_long_prompts_from_windows(template, think, tmp_path, monkeypatch):
    """A long prompt that extends nothing, its message starts found from windows
    (tokprof.attribution.window_starts) where the checks allow it: each call by a fresh attributor agrees
    with the reference, and the templates written as plain conversations do take the windows."""
    from tokprof.attribution import attributor

    monkeypatch.setattr(attributor, "FRESH_MIN", 8)
    model = tiny_model(template)
    trace = read_trace(str(write_session(tmp_path, calls=20, form="records", think=think)))
    reference, used = Reference(model), 0
    for call in trace.calls[4::5]:
        fresh = Attributor(model, incremental=True)
        got, want = fresh.attribute(call), reference.attribute(call)
        assert (got.as_dict(), got.warnings, got.spans) == (want.as_dict(), want.warnings, want.spans), call.where
        used += fresh.windowed
    if template in (CHATML, HERMES, TRIMMING):
        assert used == len(trace.calls[4::5])
    if template in (COUNTING, TOOLS_EVERYWHERE):
        assert used == 0  # the windows' headers count other messages and tools than the prompt's
    print(used)
