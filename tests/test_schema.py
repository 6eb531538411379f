"""The JSON tokprof writes, validated against the JSON Schemas in docs/schema: profile, tools, check and
sessions JSON of the sample, the small fixtures and (when ../shared/corpus is there) every corpus log."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from conftest import FIXTURES, ROOT, profile_json
from tokprof.frontends.cli import main

SCHEMAS = ROOT / "docs" / "schema"
SAMPLES = ROOT / "samples"
SAMPLE = SAMPLES / "incident_session.json"
CORPUS = Path(os.environ.get("TOKPROF_CORPUS") or ROOT.parent / "shared" / "corpus")
COMPACTED = CORPUS / "claude_code_2.1_compacted"
KINDS = ("profile", "tools", "check", "sessions", "whatif", "mcp", "watch", "diff", "sessions-periods")


def _schema_files() -> dict[str, dict]:
    return {path.name: json.loads(path.read_text(encoding="utf-8")) for path in sorted(SCHEMAS.glob("*.schema.json"))}


@pytest.fixture(scope="session")
def validators() -> dict[str, Draft202012Validator]:
    """A validator per kind; the schemas refer to each other by file name (relative ``$ref``)."""
    schemas = _schema_files()
    registry = Registry().with_resources((name, Resource.from_contents(schema)) for name, schema in schemas.items())
    return {kind: Draft202012Validator(schemas[f"{kind}.schema.json"], registry=registry) for kind in KINDS}


def assert_valid(validators, kind: str, doc: dict) -> None:
    errors = sorted(validators[kind].iter_errors(doc), key=lambda e: list(e.absolute_path))
    where = [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:300]}" for e in errors[:10]]
    assert not errors, f"{len(errors)} schema error(s) in the {kind} JSON:\n" + "\n".join(where)
    assert doc["kind"] == kind


def run_json(args: list[str], capsys, expect: int = 0) -> dict:
    code = main([*args, "-f", "json", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == expect, err
    return json.loads(out)


@pytest.fixture
def saved(sample_profile) -> Path:
    """The sample's profile, saved once by the command line (``tokprof profile LOG -f json -o FILE``; conftest's)."""
    return sample_profile


# -- the schema files themselves ---------------------------------------------------------------------
def _properties(node, where="#"):
    """Every (where, name, schema) under a ``properties`` keyword of a schema."""
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            yield f"{where}/properties/{name}", name, sub
        for key, sub in node.items():
            yield from _properties(sub, f"{where}/{key}")
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            yield from _properties(sub, f"{where}/{i}")


def test_schema_files_are_draft_2020_12_and_describe_every_field():
    schemas = _schema_files()
    assert sorted(schemas) == sorted(f"{kind}.schema.json" for kind in KINDS)
    for name, schema in schemas.items():
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema", name
        Draft202012Validator.check_schema(schema)
        assert schema.get("description"), name
        for where, field, sub in _properties(schema):
            # a field restated only to add a constraint (in if/then/else) is described where it is defined
            if "/if/" in where or "/then/" in where or "/else/" in where:
                continue
            assert isinstance(sub, dict) and sub.get("description"), f"{name}: {where} ({field}) has no description"


# -- profile -----------------------------------------------------------------------------------------
def test_profile_of_the_sample(validators, saved):
    doc = json.loads(saved.read_text(encoding="utf-8"))
    assert_valid(validators, "profile", doc)
    assert len(doc["calls"]) == 59 and doc["summary"]["catalogue"]["unknown_tool_calls"]


def test_profile_shown_again_from_the_saved_profile(validators, saved, capsys):
    doc = run_json(["profile", str(saved)], capsys)
    assert_valid(validators, "profile", doc)
    assert doc == json.loads(saved.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["good_transcript.json", "good_records.jsonl", "good_records_list.json"])
def test_profile_of_the_fixtures(validators, name, capsys):
    assert_valid(validators, "profile", profile_json([str(FIXTURES / name), "--no-progress"], capsys))


def test_the_schema_is_strict(validators, saved):
    """Unknown keys, unknown buckets and an estimate that does not say so are all errors."""
    good = json.loads(saved.read_text(encoding="utf-8"))
    bad = [
        lambda d: d["calls"][0].update(surprise=1),
        lambda d: d["summary"]["catalogue"].update(surprise=1),
        lambda d: d["model"].update(surprise=1),
        lambda d: d["calls"][0]["buckets"].update(other=1),
        lambda d: d["calls"][0].update(kind="retry"),
        lambda d: d["model"].update(exact=False),  # an estimate needs summary.estimate
        lambda d: d["summary"].pop("crossovers"),
    ]
    for change in bad:
        doc = json.loads(json.dumps(good))
        change(doc)
        assert not validators["profile"].is_valid(doc)


# -- tools -------------------------------------------------------------------------------------------
def test_tools_of_the_sample(validators, capsys):
    doc = run_json(["tools", str(SAMPLE)], capsys)
    assert_valid(validators, "tools", doc)
    assert doc["catalogue"]["requests"] == 59 and len(doc["catalogues"]) == 1


def test_tools_of_a_catalogue_alone(validators, capsys):
    doc = run_json(
        ["tools", "--tools", str(SAMPLES / "tools_anthropic.json"), "--system", str(SAMPLES / "system_prompt.txt")],
        capsys,
    )
    assert_valid(validators, "tools", doc)
    assert doc["source"]["format"] == "tools" and doc["billed_input"] is None


def test_tools_of_a_saved_profile_and_of_a_log_without_tools(validators, saved, capsys):
    assert_valid(validators, "tools", run_json(["tools", str(saved)], capsys))
    doc = run_json(["tools", str(FIXTURES / "good_records_list.json")], capsys)
    assert_valid(validators, "tools", doc)


# -- check -------------------------------------------------------------------------------------------
def test_check_of_the_sample(validators, capsys):
    doc = run_json(["check", str(SAMPLE), "--config", str(SAMPLES / "tokprof.toml")], capsys)
    assert_valid(validators, "check", doc)
    assert doc["status"] == "pass" and len(doc["metrics"]) == 7


def test_check_of_a_catalogue_alone(validators, capsys, monkeypatch, tmp_path):
    # the sample's budgets without its baseline, which measures a log (a catalogue alone is another mode)
    config = "\n".join(
        line
        for line in (SAMPLES / "tokprof.toml").read_text(encoding="utf-8").splitlines()
        if not line.startswith("baseline")
    )
    (tmp_path / "tokprof.toml").write_text(config, encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the configuration is found from the working directory
    doc = run_json(
        ["check", "--tools", str(SAMPLES / "tools_anthropic.json"), "--system", str(SAMPLES / "system_prompt.txt")],
        capsys,
    )
    assert_valid(validators, "check", doc)
    assert {m["metric"] for m in doc["metrics"] if m["status"] == "n/a"} >= {"first_prompt", "billed_input"}


def test_check_that_fails_against_a_changed_baseline(validators, saved, tmp_path, capsys):
    """Tools added, removed and changed against the baseline; a budget over its max; another template."""
    config = (
        (SAMPLES / "tokprof.toml")
        .read_text(encoding="utf-8")
        .replace("tool_definitions = 3000", "tool_definitions = 2000")
    )
    (tmp_path / "tokprof.toml").write_text(config, encoding="utf-8")
    baseline = json.loads((SAMPLES / "tokprof-baseline.json").read_text(encoding="utf-8"))
    baseline["tools"].pop("get_logs")
    baseline["tools"]["get_trace"] -= 20
    baseline["tools"]["retired_tool"] = 99
    baseline["chat_template_sha256"] = "0" * 64
    (tmp_path / "tokprof-baseline.json").write_text(json.dumps(baseline), encoding="utf-8")
    doc = run_json(["check", str(saved), "--config", str(tmp_path / "tokprof.toml")], capsys, expect=1)
    assert_valid(validators, "check", doc)
    assert doc["status"] == "fail"
    assert all(doc["tools"][key] for key in ("added", "removed", "changed")) and doc["notes"]


def test_check_that_writes_the_baseline(validators, saved, tmp_path, capsys):
    (tmp_path / "tokprof.toml").write_text((SAMPLES / "tokprof.toml").read_text(encoding="utf-8"), encoding="utf-8")
    doc = run_json(["check", str(saved), "--config", str(tmp_path / "tokprof.toml"), "--update-baseline"], capsys)
    assert_valid(validators, "check", doc)
    assert doc["baseline"] is None and (tmp_path / "tokprof-baseline.json").is_file()


# -- the shared corpus of real logs ------------------------------------------------------------------
def corpus_logs() -> list[Path]:
    """Every log of the corpus: its files, and the session file of the compacted Claude Code directory."""
    if not CORPUS.is_dir():
        return []
    files = [path for path in sorted(CORPUS.iterdir()) if path.is_file() and path.suffix != ".md"]
    return files + sorted(COMPACTED.glob("*.jsonl"))


CORPUS_LOGS = corpus_logs()


@pytest.mark.parametrize(
    "log",
    CORPUS_LOGS or [pytest.param(None, marks=pytest.mark.skip(reason=f"the shared corpus is not at {CORPUS}"))],
    ids=[path.name[:40] for path in CORPUS_LOGS] or ["absent"],
)
def test_profile_of_every_corpus_log(validators, log, capsys):
    code = main(["profile", str(log), "-f", "json", "--no-progress"])
    out, err = capsys.readouterr()
    if code == 2 and "not a log format tokprof reads" in err:
        pytest.skip(f"{log.name}: a format tokprof does not read")
    assert code == 0, err
    assert_valid(validators, "profile", json.loads(out))


def test_sessions_of_the_compacted_corpus_directory(validators, capsys):
    if not COMPACTED.is_dir():
        pytest.skip(f"the shared corpus directory is not at {COMPACTED}")
    doc = run_json(["profile", str(COMPACTED)], capsys)
    assert_valid(validators, "sessions", doc)
    assert doc["totals"]["compactions"] >= 1


# -- whatif ------------------------------------------------------------------------------------------
def test_whatif_of_the_sample(validators, capsys):
    doc = run_json(
        ["whatif", str(SAMPLE), "-p", "compact:30", "-p", "window-tokens:20000", "-p", "clear-tool-uses:30000:2"],
        capsys,
    )
    assert_valid(validators, "whatif", doc)
    assert [p["policy"] for p in doc["policies"]][:2] == ["full", "compact:30"]
    assert any(c["kind"] == "summary" for c in doc["policies"][1]["per_call"])


@pytest.mark.parametrize("name", ["good_transcript.json", "good_records.jsonl"])
def test_whatif_of_the_fixtures(validators, name, capsys):
    assert_valid(validators, "whatif", run_json(["whatif", str(FIXTURES / name)], capsys))


def test_whatif_of_the_compacted_claude_code_session(validators, capsys):
    log = COMPACTED / "8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"
    if not log.exists():
        pytest.skip("the corpus is not here")
    doc = run_json(["whatif", str(log), "-p", "window:20", "-p", "compact:40"], capsys)
    assert_valid(validators, "whatif", doc)
    assert not doc["exact"] and doc["policies"][2]["summaries"] >= 1


def test_the_whatif_schema_is_strict(validators, capsys):
    good = run_json(["whatif", str(FIXTURES / "good_transcript.json"), "-p", "cap:5"], capsys)
    bad = [
        lambda d: d.update(surprise=1),
        lambda d: d["policies"][0].update(surprise=1),
        lambda d: d["policies"][0]["per_call"][0].update(kind="retry"),
        lambda d: d["policies"][0].pop("shared_prefix"),
    ]
    for change in bad:
        doc = json.loads(json.dumps(good))
        change(doc)
        assert not validators["whatif"].is_valid(doc)


# -- watch --json ------------------------------------------------------------------------------------
def _watch_lines(path: Path, count: bool) -> list[dict]:
    from tokprof.live import LiveSession

    return [json.loads(call.to_json()) for call in LiveSession(str(path), count=count).update()]


def test_watch_lines_of_a_session_being_written(validators, tmp_path):
    from test_watch import lines

    session = tmp_path / "s.jsonl"
    session.write_text(lines([(20_000, 0), (150_000, 19_000), (165_000, 20_000)]))
    for count in (False, True):
        docs = _watch_lines(session, count)
        assert len(docs) == 3
        for doc in docs:
            assert_valid(validators, "watch", doc)
        assert (docs[-1]["buckets"] is not None) is count and docs[-1]["crossed"] == [0.8]


def test_watch_lines_of_a_session_without_usage_and_of_a_recording(validators, tmp_path):
    from test_record_live import exchange, main_call, reply

    session = tmp_path / "s.jsonl"
    turn = {
        "type": "user",
        "sessionId": "s",
        "uuid": "u0",
        "parentUuid": None,
        "timestamp": "2025-10-01T10:00:00Z",
        "message": {"role": "user", "content": "hello"},
    }
    answer = {
        "type": "assistant",
        "sessionId": "s",
        "uuid": "a0",
        "parentUuid": "u0",
        "timestamp": "2025-10-01T10:00:01Z",
        "message": {
            "id": "m0",
            "role": "assistant",
            "model": "unknown-model",
            "content": [{"type": "text", "text": "hi"}],
        },
    }
    session.write_text(json.dumps(turn) + "\n" + json.dumps(answer) + "\n")
    docs = _watch_lines(session, True)
    assert docs and docs[0]["basis"] == "computed" and docs[0]["cost"] is None
    assert_valid(validators, "watch", docs[0])
    from tokprof.live_record import LiveRecording

    live = LiveRecording(str(tmp_path / "r.jsonl"))
    figures = live.add(exchange(main_call(1), reply(30_000, 20_000)))
    assert figures is not None
    assert_valid(validators, "watch", figures.to_dict())


def test_the_watch_schema_is_strict(validators, tmp_path):
    from test_watch import lines

    session = tmp_path / "s.jsonl"
    session.write_text(lines([(20_000, 0), (150_000, 19_000)]))
    good = _watch_lines(session, True)[-1]
    bad = [
        lambda d: d.update(surprise=1),
        lambda d: d["buckets"].update(other=1),
        lambda d: d["buckets"].update(system=-1),
        lambda d: d.update(basis="guessed"),
        lambda d: d.pop("cost"),
        lambda d: d.update(cache_read_share=1.5),
    ]
    for change in bad:
        doc = json.loads(json.dumps(good))
        change(doc)
        assert not validators["watch"].is_valid(doc)


def test_watch_lines_of_a_corpus_session(validators):
    session = CORPUS / "claude_code_medium_full-session-four.jsonl"
    if not session.exists():
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    docs = _watch_lines(session, False)
    assert docs
    for doc in docs:
        assert_valid(validators, "watch", doc)
