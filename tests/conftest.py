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
    os.environ["TOKPROF_STATE_DIR"] = str(tmp_path_factory.mktemp("tokprof-state"))  # the sessions listing
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    yield


def adopt_orphans() -> bool:
    """Make this process adopt its orphaned descendants (Linux's child subreaper): a process a test
    starts in a session of its own (a background counter) becomes this process's child when its
    parent exits, instead of init's, so that it can be found. False where the system has no such thing."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


#: The test process's own helpers, which end when it does (multiprocessing's resource tracker and fork
#: server, started by a process pool): not left behind.
OWN_HELPERS = ("from multiprocessing.resource_tracker import main", "from multiprocessing.forkserver import main")


def running_children() -> dict[int, str]:
    """This process's children that still run (pid: command line); the ones that have ended are
    reaped on the way (an adopted orphan that ends stays a zombie until its new parent waits for it)."""
    found: dict[int, str] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            pid = int(stat.parent.name)
            if int(fields[1]) != os.getpid():
                continue
            if fields[0] == "Z":
                os.waitpid(pid, os.WNOHANG)
                continue
            found[pid] = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError, IndexError):
            continue  # ended while it was read
    return found


def left_behind(grace: float = 10.0) -> dict[int, str]:
    """The children still running after ``grace`` seconds (processes stopped at the end of a test may
    take a moment to exit), but the test process's own helpers (:data:`OWN_HELPERS`)."""
    import time

    end = time.monotonic() + grace
    while True:
        found = {pid: c for pid, c in running_children().items() if not any(h in c for h in OWN_HELPERS)}
        if not found or time.monotonic() >= end:
            return found
        time.sleep(0.1)


def stop_statusline_counters(folder: Path, wait: float = 30.0) -> int:
    """Stop the bucket counters ``tokprof statusline`` started with its state in ``folder`` (each
    writes its pid into its lock file there once it runs, within ``wait`` seconds), and wait for
    them to end; how many were stopped."""
    import signal
    import time

    stopped = 0
    for lock in folder.glob("*.lock"):
        end, pid = time.monotonic() + wait, None
        while pid is None and time.monotonic() < end:
            text = lock.read_text().strip()
            if text.isdigit():
                pid = int(text)
            else:
                time.sleep(0.05)
        if pid is None:
            continue
        try:
            if b"statusline_counter" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue  # ended already (its pid since reused)
            os.kill(pid, signal.SIGTERM)
        except (OSError, ProcessLookupError):
            continue
        stopped += 1
        while time.monotonic() < end:
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:  # an orphan this test run adopted
                    break
            except ChildProcessError:  # init's child: gone when /proc no longer has it
                if not Path(f"/proc/{pid}").exists():
                    break
            time.sleep(0.05)
    return stopped


@pytest.fixture(scope="session", autouse=True)
def _no_process_left_behind():
    """No test leaves a process running (#46 item 5): the test run adopts the orphans of what it
    starts (:func:`adopt_orphans`), and when every test and fixture is done, none may still run;
    any that do are named, then stopped."""
    import signal

    if not adopt_orphans():
        yield
        return
    before = set(running_children())  # a plugin's own helpers, started before the first test
    yield
    left = {pid: command for pid, command in left_behind().items() if pid not in before}
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    left_behind(grace=5.0)  # reaped
    assert not left, "processes the tests started are still running: " + "; ".join(
        f"{pid} {command[:200]}" for pid, command in left.items()
    )


@pytest.fixture(scope="session")
def sample_profile(tmp_path_factory) -> Path:
    """The sample's profile as ``tokprof profile samples/incident_session.json -f json -o FILE`` writes it
    (no configuration), made once for the test run: the tests that read its figures, and the reports
    shown from it as a saved profile (shown as the log is: tests/test_saved_profile.py), share it."""
    from tokprof.frontends.cli import main

    folder = tmp_path_factory.mktemp("sample-profile")
    path = folder / "incident_session.json"
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)  # no tokprof.toml found
        assert main(["profile", str(ROOT / "samples" / "incident_session.json"), "-f", "json", "-o", str(path)]) == 0
    return path


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
