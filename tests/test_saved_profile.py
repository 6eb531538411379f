"""One data file, many reports: a saved profile is shown, reported on and checked without the log."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT, small_transcript, write_json
from tokprof.frontends.cli import main

SAMPLE = ROOT / "samples" / "incident_session.json"


def run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def saved_sample(sample_profile) -> str:
    """The sample's saved profile (the JSON ``tokprof profile -o`` writes; conftest's, made once)."""
    return sample_profile.read_text(encoding="utf-8")


def test_every_report_of_a_saved_profile_is_the_report_of_the_log(saved_sample, tmp_path, capsys, monkeypatch):
    saved = tmp_path / "run.json"
    saved.write_text(saved_sample, encoding="utf-8")
    assert json.loads(saved.read_text())["kind"] == "profile"
    for fmt in ("table", "csv", "json"):
        from_log = run(["profile", str(SAMPLE), "-f", fmt, "--calls", "all"], capsys)
        from_file = run(["profile", str(saved), "-f", fmt, "--calls", "all"], capsys)
        assert from_log == from_file, fmt
    assert run(["report", str(SAMPLE), "-o", str(tmp_path / "a.html")], capsys)[0] == 0
    assert run(["report", str(saved), "-o", str(tmp_path / "b.html")], capsys)[0] == 0
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()
    from_log, from_file = (run(["tools", str(path), "-f", "json"], capsys) for path in (SAMPLE, saved))
    assert from_log[0] == from_file[0] == 0
    # before the samples' prices apply to the log; the cut list's replays need the log (a saved profile
    # holds no prompts to replay): the rest is the same
    replayed = ("saving_dollars", "saving_tokens", "replay", "not_replayed")
    log_doc, file_doc = json.loads(from_log[1]), json.loads(from_file[1])
    for doc in (log_doc, file_doc):
        for row in doc["cut_list"]["rows"]:
            for key in replayed:
                row.pop(key)
    assert log_doc == file_doc
    assert all(row["not_replayed"] for row in json.loads(from_file[1])["cut_list"]["rows"])
    monkeypatch.chdir(ROOT / "samples")
    assert run(["check", str(SAMPLE), "-f", "json"], capsys) == run(["check", str(saved), "-f", "json"], capsys)


def test_options_that_read_a_log_are_refused_for_a_saved_profile(tmp_path, capsys):
    log = write_json(tmp_path / "log.json", small_transcript())
    saved = tmp_path / "run.json"
    run(["profile", str(log), "-f", "json", "-o", str(saved)], capsys)
    code, out, err = run(["profile", str(saved), "--model", "qwen3"], capsys)
    assert code == 2 and out == "" and "--model applies to logs" in err and err.count("\n") == 1


def test_a_damaged_saved_profile_is_one_line(tmp_path, capsys):
    path = tmp_path / "run.json"
    path.write_text('{"schema_version": 1, "kind": "profile", "model": {"name": "x"}, "source": {}, "calls": [{}]}')
    code, _, err = run(["profile", str(path)], capsys)
    assert code == 2 and err.startswith(f"tokprof: error: {path}: calls[0].buckets: expected") and err.count("\n") == 1


@pytest.mark.parametrize(
    "change, said",
    [
        (lambda c: c["buckets"].update(system="abc"), "calls[3].buckets.system: expected a whole number of tokens"),
        (lambda c: c["buckets"].update(system=10**400), "calls[3].buckets.system: expected a whole number of tokens"),
        (lambda c: c["buckets"].update(system=-5), "calls[3].buckets.system: expected a whole number of tokens"),
        (lambda c: c["buckets"].update(system=True), "calls[3].buckets.system: expected a whole number of tokens"),
        (lambda c: c.update(total=12345), "calls[3].total: 12,345 is not the sum of its buckets"),
        (lambda c: c["buckets"].update({"\x1b[31m[bold]": 0}), "calls[3].buckets: '\\x1b[31m[bold]' is not a bucket"),
        (lambda c: c.update(messages=None), "calls[3].messages: expected a whole number"),
    ],
)
@pytest.mark.parametrize("command", ["profile", "check", "report"])
def test_a_saved_profile_that_breaks_the_rule_is_one_line(change, said, command, saved_sample, tmp_path, capsys):
    """Every report reads a saved profile's buckets: they must be whole numbers, 0 or more, adding up
    to the call's total, as tokprof writes them."""
    saved = tmp_path / "run.json"
    data = json.loads(saved_sample)
    change(data["calls"][3])
    saved.write_text(json.dumps(data), encoding="utf-8")
    args = [command, str(saved)] + (["-o", str(tmp_path / "r.html")] if command == "report" else [])
    code, out, err = run(args, capsys)
    assert code == 2 and err == f"tokprof: error: {saved}: {said}" + err[len(f"tokprof: error: {saved}: {said}") :]
    assert err.count("\n") == 1 and "\x1b" not in err and not (tmp_path / "r.html").exists()


def test_the_schema_link_written_as_a_file_is_followed(tmp_path, monkeypatch):
    """Git without symlinks (Windows) writes tokprof/schemas/*.json as a file holding the link's target."""
    from conftest import ROOT

    import tokprof.profiling as profiling

    package = tmp_path / "tokprof"
    (package / "schemas").mkdir(parents=True)
    (tmp_path / "docs" / "schema").mkdir(parents=True)
    real = (ROOT / "docs" / "schema" / "profile.schema.json").read_text(encoding="utf-8")
    (tmp_path / "docs" / "schema" / "profile.schema.json").write_text(real, encoding="utf-8")
    (package / "schemas" / "profile.schema.json").write_text("../../docs/schema/profile.schema.json", encoding="utf-8")
    monkeypatch.setattr(profiling.resources, "files", lambda name: package)
    profiling._schema.cache_clear()
    try:
        assert profiling._schema() == json.loads(real)
    finally:
        profiling._schema.cache_clear()
