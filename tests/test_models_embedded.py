"""The embedded models of issue #18, each against its reference on tool-calling transcripts of
several turns: every call's total is the reference's token count, and its buckets are never
negative and sum to it.

* Llama 3.x, Qwen3.5/3.6, DeepSeek V4: transformers' ``apply_chat_template`` on a tokenizer
  directory built from the shipped files (the converted or shipped ``tokenizer.json`` and the
  chat template in ``tokenizer_config.json``);
* Mistral: mistral-common's ``encode_chat_completion``;
* gpt-oss: openai-harmony's ``render_conversation_for_completion``;
* GGUF: a file written here with the ``gguf`` package (vocabulary and template only).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT
from tokprof.attribution.attributor import Attributor
from tokprof.formats import read_trace
from tokprof.models import resolve_model
from tokprof.models.template import DEFAULT_DAY
from tokprof.trace import Call, Trace
from tokprof.transforms import fit

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file from the repository.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Repository path"}},
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_tests",
            "description": "Run the test suite.",
            "parameters": {
                "type": "object",
                "properties": {"pattern": {"type": "string"}, "verbose": {"type": "boolean"}},
            },
        },
    },
]
_CONVERSATION = [
    {"role": "system", "content": "You are a careful coding agent. Answer briefly."},
    {"role": "user", "content": "The tests in tokprof fail since this morning; find out why."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_8f3a1b2c4d5e",
                "type": "function",
                "function": {"name": "run_tests", "arguments": '{"pattern": "test_cli", "verbose": true}'},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call_8f3a1b2c4d5e",
        "content": "FAILED tests/test_cli.py::test_help - AssertionError: 'qwen3' not in output\n1 failed, 41 passed",
    },
    {
        "role": "assistant",
        "content": "One failure in the help text. Reading the CLI.",
        "tool_calls": [
            {
                "id": "call_00000000000x",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "tokprof/frontends/cli.py"}'},
            },
            {
                "id": "call_00000000000y",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"path": "tests/test_cli.py"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_00000000000x", "content": "def help():\n    return 'models: qwen2.5'\n"},
    {
        "role": "tool",
        "tool_call_id": "call_00000000000y",
        "content": "def test_help():\n    assert 'qwen3' in help()\n",
    },
    {"role": "assistant", "content": "The help lists only qwen2.5; the test expects qwen3 too. Café, 日本語, ✓."},
    {"role": "user", "content": "Fix it, then run the tests again."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_zzz", "type": "function", "function": {"name": "run_tests", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "call_zzz", "content": "42 passed"},
]


def _sequential(conversation: list[dict]) -> list[dict]:
    """The conversation with each parallel tool call made on its own, then answered (Llama 3's templates
    take one tool call per message, and say so: "This model only supports single tool-calls at once!")."""
    out: list[dict] = []
    results = {m["tool_call_id"]: m for m in conversation if m["role"] == "tool"}
    for m in conversation:
        if m["role"] == "assistant" and len(m.get("tool_calls") or []) > 1:
            for j, call in enumerate(m["tool_calls"]):
                out.append({**m, "content": m["content"] if j == 0 else None, "tool_calls": [call]})
                out.append(results[call["id"]])
        elif not (
            m["role"] == "tool"
            and any(
                m is results.get(c["id"])
                for o in conversation
                if len(o.get("tool_calls") or []) > 1
                for c in o["tool_calls"]
            )
        ):
            out.append(m)
    return out


def transcript_calls(parallel: bool = True) -> list[Call]:
    """A call after each user and tool message of the conversation (several turns, parallel tool
    calls unless ``parallel`` is False, content beside tool calls), then the calls of the fixture logs."""
    conversation = _CONVERSATION if parallel else _sequential(_CONVERSATION)
    calls = [
        Call(index=i, messages=copy.deepcopy(conversation[: k + 1]), tools=copy.deepcopy(TOOLS), where=f"call {i}")
        for i, k in enumerate(k for k, m in enumerate(conversation) if m["role"] in ("user", "tool"))
    ]
    for path in sorted(FIXTURES.glob("good_*")):
        for call in read_trace(str(path)).calls:
            if not parallel and any(len(m.get("tool_calls") or []) > 1 for m in call.messages):
                continue
            call.index = len(calls)
            calls.append(call)
    return calls


def profiled(model, calls: list[Call]) -> list:
    """Each call's buckets, the trace fitted to the model first (tool-call ids); ``calls`` becomes the
    fitted calls (fit leaves the ones given as they are), for the references to count the same."""
    trace = fit(Trace(path="test", format="test", calls=calls), model)
    calls[:] = trace.calls
    attributor = Attributor(model)
    out = []
    for call in trace.calls:
        buckets = attributor.attribute(call)
        assert min(buckets.as_dict().values()) >= 0, call.where
        out.append(buckets)
    return out


# -- Jinja families, against transformers -------------------------------------------------------
def _tokenizer_directory(tmp_path: Path, model, tokenizer) -> Path:
    """A tokenizer directory as a Hub repository holds it: tokenizer.json and tokenizer_config.json."""
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    config = {
        "chat_template": model.prompt_format.source,
        **model.prompt_format.special_tokens,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return tmp_path


def _reference_tokenizer(name: str):
    from tokenizers import Tokenizer

    if name.startswith("llama"):
        from tokprof.models.llama import llama_tokenizer

        return llama_tokenizer()
    if name.startswith("qwen"):
        from tokprof.models.qwen import QWEN35_ADDED, qwen_tokenizer

        return qwen_tokenizer(QWEN35_ADDED)[0]
    from tokprof.models.deepseek import tokenizer_path

    return Tokenizer.from_file(str(tokenizer_path()))


def _ids(found) -> list[int]:
    if isinstance(found, dict) or hasattr(found, "keys"):
        found = found["input_ids"]
    return list(found)


@pytest.fixture(scope="module")
def hf_tokenizers(tmp_path_factory):
    """transformers' tokenizer of a directory built from a model's files, loaded once per vocabulary and
    special tokens (Llama 3.1, 3.2 and 3.3 share theirs; a 150,000-token vocabulary takes seconds to load):
    each model's own chat template is given to ``apply_chat_template``."""
    transformers = pytest.importorskip("transformers")
    loaded: dict[str, object] = {}

    def tokenizer(name: str, model):
        key = json.dumps([name.rstrip("0123456789.").rstrip("-"), model.prompt_format.special_tokens], sort_keys=True)
        if key not in loaded:
            folder = tmp_path_factory.mktemp("tokenizer")
            directory = _tokenizer_directory(folder, model, _reference_tokenizer(name))
            loaded[key] = transformers.AutoTokenizer.from_pretrained(str(directory))
        return loaded[key]

    return tokenizer


@pytest.mark.parametrize("name", ["llama3.1", "llama3.2", "llama3.3", "qwen3.5", "qwen3.6", "deepseek-v4"])
def test_jinja_families_match_apply_chat_template(name, hf_tokenizers):
    model = resolve_model(name)
    hf = hf_tokenizers(name, model)
    calls = transcript_calls(parallel=not name.startswith("llama"))
    source = model.prompt_format.source
    for call, buckets in zip(calls, profiled(model, calls)):
        messages = model.prompt_format.prepare(call.messages, model.prompt_format.shapes[0])
        rendered = model.prompt_format.render(messages, call.tools, True, call.day)
        # tokprof pins the date templates print (the call's, else 2025-01-01); transformers prints today's
        pinned = {"date_string": (call.day or DEFAULT_DAY).strftime("%d %b %Y")} if "strftime_now" in source else {}
        theirs = hf.apply_chat_template(
            json.loads(json.dumps(messages)),
            tools=call.tools,
            chat_template=source,
            add_generation_prompt=True,
            tokenize=False,
            **pinned,
        )
        assert rendered == theirs, call.where
        ids = _ids(
            hf.apply_chat_template(
                json.loads(json.dumps(messages)),
                tools=call.tools,
                chat_template=source,
                add_generation_prompt=True,
                tokenize=True,
                **pinned,
            )
        )
        assert buckets.total == len(ids), call.where


# -- Mistral, against mistral-common ------------------------------------------------------------
@pytest.mark.parametrize("name", ["mistral", "mistral-nemo", "mistral-large"])
def test_mistral_matches_encode_chat_completion(name):
    from tokprof.models.mistral import MistralFormat

    model = resolve_model(name)
    prompt_format = model.prompt_format
    assert isinstance(prompt_format, MistralFormat)
    calls = transcript_calls()
    results = profiled(model, calls)
    for call, buckets in zip(calls, results):
        messages = prompt_format.prepare(call.messages, "request")
        reference = prompt_format.tokenizer.encode_chat_completion(prompt_format.request(messages, call.tools)).tokens
        assert buckets.total == len(reference), call.where
        text = prompt_format.render(messages, call.tools, True, call.day)
        assert model.counter.count(text) == len(reference), call.where
        # counting the text anew (no remembered render) gives the reference's count too
        assert len(model.counter.encode_starts(text)) == len(reference), call.where
    for call in calls:  # every tool-call id is of the form mistral-common demands
        for m in call.messages:
            for c in m.get("tool_calls") or []:
                assert re.fullmatch(r"[A-Za-z0-9]{9}", c["id"])


def test_mistral_prefixes_mistral_common_refuses_still_own_every_token():
    """mistral-common encodes no empty conversation: render_prefix raises there, and the buckets
    still hold every token."""
    model = resolve_model("mistral")
    with pytest.raises(ValueError):
        model.prompt_format.render_prefix([], TOOLS)
    calls = transcript_calls()[:6]
    for call, buckets in zip(calls, profiled(model, calls)):
        text = model.prompt_format.render(model.prompt_format.prepare(call.messages, "request"), call.tools, True)
        assert buckets.total == model.counter.count(text)


# -- gpt-oss, against openai-harmony ------------------------------------------------------------
def test_gpt_oss_matches_harmony():
    from openai_harmony import Role

    from tokprof.models.harmony import conversation, harmony_encoding

    model = resolve_model("gpt-oss")
    calls = transcript_calls() + read_trace(str(ROOT / "samples" / "incident_session.json")).calls[:12]
    for call, buckets in zip(calls, profiled(model, calls)):
        messages = model.prompt_format.prepare(call.messages, "harmony")
        reference = harmony_encoding().render_conversation_for_completion(
            conversation(messages, call.tools, call.day), Role.ASSISTANT
        )
        text = model.prompt_format.render(messages, call.tools, True, call.day)
        assert text == harmony_encoding().decode_utf8(reference), call.where
        assert model.counter.count(text) == len(reference), call.where
        assert buckets.total == len(reference), call.where


# -- GGUF and Ollama ----------------------------------------------------------------------------
GGUF_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|start|>{{ m.role }}\n{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}<call>{{ c.function.name }} {{ c.function.arguments | tojson }}</call>{% endfor %}"
    "<|end|>\n{% endfor %}{% if tools %}<|start|>tools\n{% for t in tools %}{{ t.function | tojson }}\n{% endfor %}"
    "<|end|>\n{% endif %}{% if add_generation_prompt %}<|start|>assistant\n{% endif %}"
)


def _tiny_bpe():
    """A byte-level BPE tokenizer trained here, with Llama 3's pre-tokenizer (GGUF's ``llama-bpe``)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    from tokprof.models.gguf import PRE_TOKENIZERS

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRE_TOKENIZERS["llama-bpe"]), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<s>", "</s>", "<|start|>", "<|end|>"],
    )
    corpus = [json.dumps(m, ensure_ascii=False) for m in _CONVERSATION] + [json.dumps(TOOLS)] * 3
    tokenizer.train_from_iterator(corpus, trainer)
    return tokenizer


def write_gguf(path: Path, tokenizer, template: str = GGUF_TEMPLATE) -> Path:
    import gguf

    data = json.loads(tokenizer.to_str())
    vocab = data["model"]["vocab"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda item: item[1])]
    special = {t["content"] for t in data["added_tokens"]}
    merges = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("llama-bpe")
    writer.add_token_list(tokens)
    writer.add_token_types([3 if t in special else 1 for t in tokens])
    writer.add_token_merges(merges)
    writer.add_bos_token_id(vocab["<s>"])
    writer.add_eos_token_id(vocab["</s>"])
    writer.add_chat_template(template)
    writer.add_context_length(4096)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_gguf_file_matches_apply_chat_template(tmp_path):
    transformers = pytest.importorskip("transformers")
    tokenizer = _tiny_bpe()
    path = write_gguf(tmp_path / "tiny.gguf", tokenizer)
    model = resolve_model(str(path))
    assert model.prompt_format.origin == "gguf:tiny.gguf" and model.context_window == 4096
    hf = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>")
    hf.chat_template = GGUF_TEMPLATE
    calls = transcript_calls()
    for call, buckets in zip(calls, profiled(model, calls)):
        messages = model.prompt_format.prepare(call.messages, model.prompt_format.shapes[0])
        ids = _ids(
            hf.apply_chat_template(
                json.loads(json.dumps(messages)), tools=call.tools, add_generation_prompt=True, tokenize=True
            )
        )
        assert buckets.total == len(ids), call.where


def test_ollama_name_resolves_through_its_manifest(tmp_path, monkeypatch):
    import hashlib

    blob_data = write_gguf(tmp_path / "model.gguf", _tiny_bpe()).read_bytes()
    digest = hashlib.sha256(blob_data).hexdigest()
    root = tmp_path / "ollama"
    (root / "blobs").mkdir(parents=True)
    (root / "blobs" / f"sha256-{digest}").write_bytes(blob_data)
    manifest = root / "manifests" / "registry.ollama.ai" / "library" / "tinyllm" / "1b"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(
        json.dumps(
            {
                "schemaVersion": 2,
                "layers": [
                    {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "0" * 64},
                    {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}"},
                ],
            }
        )
    )
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    model = resolve_model("tinyllm:1b")
    assert model.name == "tinyllm:1b" and model.prompt_format.origin == "gguf:" + f"sha256-{digest}"
    assert model.count("<|start|>user") >= 2
    from tokprof.base.errors import ModelError

    with pytest.raises(ModelError):
        resolve_model("tinyllm:2b")  # no such manifest: an unknown model


# -- choosing, ids, the docs --------------------------------------------------------------------
@pytest.mark.parametrize(
    "log_name, expected",
    [
        ("meta-llama/Llama-3.3-70B-Instruct", "llama3.3"),
        ("llama3.1:8b", "llama3.1"),
        ("Meta-Llama-3.2-3B-Instruct", "llama3.2"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral"),
        ("open-mistral-nemo", "mistral-nemo"),
        ("mistral-large-2411", "mistral-large"),
        ("mistral-small-latest", "mistral-small"),
        ("codestral-latest", "codestral"),
        ("openai/gpt-oss-120b", "gpt-oss"),
        ("gpt-oss:20b", "gpt-oss"),
        ("deepseek-ai/DeepSeek-V4-Flash", "deepseek-v4"),
        ("deepseek-chat", "deepseek-v4"),
        ("Qwen/Qwen3.6-27B", "qwen3.6"),
        ("qwen3.5:9b", "qwen3.5"),
        ("Qwen/Qwen3-8B", "qwen3"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5"),
        ("gpt-4o", "openai-proxy"),
    ],
)
def test_a_log_model_is_chosen_not_stood_in_for(log_name, expected):
    from tokprof.models import auto_model

    name, why = auto_model([log_name])
    assert name == expected and "stand-in" not in why


@pytest.mark.parametrize("log_name", ["Qwen/Qwen2-7B-Instruct", "Qwen/QwQ-32B", "qwen-max", "Qwen"])
def test_other_qwen_models_are_labelled_stand_ins(log_name):
    """Their templates are not Qwen2.5's (Qwen2's default system prompt, QwQ's thinking): counted with
    qwen2.5 as a labelled stand-in, not as exact."""
    from tokprof.models import auto_model

    name, why = auto_model([log_name])
    assert name == "qwen2.5" and "stand-in" in why


def test_tool_call_ids_are_mapped_deterministically_with_a_warning():
    from tokprof.transforms import fit_tool_call_ids
    from tokprof.transforms.tool_ids import WARN_TOOL_IDS

    def trace():
        shared = copy.deepcopy(_CONVERSATION)
        return Trace(
            path="t",
            format="t",
            calls=[Call(index=0, messages=shared[:4], tools=None), Call(index=1, messages=shared, tools=None)],
        )

    first, second = fit_tool_call_ids(trace()), fit_tool_call_ids(trace())
    ids = [c["id"] for m in first.calls[1].messages for c in m.get("tool_calls") or []]
    answers = [m["tool_call_id"] for m in first.calls[1].messages if m["role"] == "tool"]
    assert ids == answers and all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in ids) and len(set(ids)) == 4
    assert ids == [c["id"] for m in second.calls[1].messages for c in m.get("tool_calls") or []]
    note = next(n for n in first.notes if n.code == WARN_TOOL_IDS)
    assert len(note.places) == 4 and "call_zzz -> " in note.places[-1]
    assert fit_tool_call_ids(first).notes == first.notes  # a second time changes nothing


def test_a_profile_of_an_openai_log_with_mistral_warns_of_mapped_ids():
    import tokprof

    result = tokprof.profile(str(FIXTURES / "good_transcript.json"), model="mistral-nemo")  # ids such as call_a
    assert "tool-call-ids-mapped" in {w.code for w in result.warnings} and result.calls
    for row in result.calls:
        assert sum(row.buckets.values()) == row.total and min(row.buckets.values()) >= 0


EMBEDDED = [
    "llama3.1",
    "llama3.2",
    "llama3.3",
    "mistral",
    "mistral-nemo",
    "ministral-8b",
    "mistral-small",
    "mistral-large",
    "mixtral",
    "codestral",
    "pixtral",
    "pixtral-large",
    "gpt-oss",
    "deepseek-v4",
    "qwen3.5",
    "qwen3.6",
]


def test_the_docs_table_lists_every_embedded_name_with_its_checksums():
    import hashlib

    from tokprof.models import registry

    text = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    names = {spec.name for spec in registry.specs()}
    for name in EMBEDDED:
        assert name in names
        assert re.search(rf"^\|[^|\n]*`{re.escape(name)}`", text, re.M), name  # in the table's first column
    # the checksums the table gives are those of the files installed
    for digest, relative in re.findall(r"`([0-9a-f]{64})` \(`([\w./-]+)`\)", text):
        package, _, rest = relative.partition("/")
        from importlib import resources

        data = resources.files(package).joinpath(rest).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest, relative


def test_a_plugin_model_is_found_by_name_only_when_no_shipped_one_has_it(monkeypatch):
    from tokprof.models import registry

    shipped = registry.lookup("qwen2.5")
    assert shipped is not None
    plugin = registry.ModelSpec(
        "my-model",
        "a plug-in's model",
        load=shipped.load,
        aliases=("qwen2.5",),
        serves=lambda name: name.startswith("My"),
    )
    scanned = []

    def entry_points():
        scanned.append(True)
        return [plugin]

    monkeypatch.setattr(registry, "_entry_point_specs", entry_points)
    registry.plugins.cache_clear()
    try:
        assert registry.lookup("qwen2.5") is shipped and not scanned  # a shipped name: no scan
        assert "my-model" not in registry.known_names(include_plugins=False) and not scanned
        assert registry.lookup("MY-MODEL") is plugin and scanned
        assert registry.serving("My-Model-7B") is plugin
        assert "my-model" in registry.known_names()
    finally:
        registry.plugins.cache_clear()


def test_help_lists_the_new_names():
    from typer.testing import CliRunner

    from tokprof.frontends.cli import app

    result = CliRunner().invoke(app, ["profile", "--help"], env={"COLUMNS": "400"})
    for name in ("llama3.3", "mistral-nemo", "gpt-oss", "deepseek-v4", "qwen3.6"):
        assert name in result.output


def test_llama_renders_parallel_tool_calls_one_per_message():
    """Llama 3's templates fail on parallel tool calls; tokprof writes them one per message, and
    renders everything else exactly as the template does."""
    from tokprof.models.llama import one_call_each

    model = resolve_model("llama3.1")
    messages = model.prompt_format.prepare(copy.deepcopy(_CONVERSATION), "parsed")
    split = one_call_each(messages)
    assert len(split) == len(messages) + 1
    assert model.prompt_format.render(messages, TOOLS, True) == model.prompt_format.render(split, TOOLS, True)
    calls = transcript_calls()
    for call, buckets in zip(calls, profiled(model, calls)):
        text = model.prompt_format.render(model.prompt_format.prepare(call.messages, "parsed"), call.tools, True)
        assert buckets.total == model.count(text), call.where
