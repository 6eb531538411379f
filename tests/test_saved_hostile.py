"""Saved profiles are input too (#33 item 5): nested 1,000 deep, a list where a number belongs, a
lone surrogate, NaN. Each is one line naming the file and the place, exit 2, in every command that
shows a saved profile; and a fixed-seed fuzzer of saved profiles (values replaced, as the log fuzzer
does) never crashes nor writes invalid JSON."""

from __future__ import annotations

import json
import os
import random

import pytest
from conftest import FIXTURES
from test_fuzz import ODD_VALUES, STRANGE_STRINGS, _get, _places, _replace, dump

from tokprof.frontends.cli import main

COMMANDS = [["profile"], ["profile", "-f", "json"], ["tools"], ["profile", "-f", "csv"]]


@pytest.fixture(scope="module")
def saved(tmp_path_factory, fuzz_model_dir):
    path = tmp_path_factory.mktemp("saved") / "run.json"
    assert (
        main(
            [
                "profile",
                str(FIXTURES / "good_transcript.json"),
                "--model",
                str(fuzz_model_dir),
                "-f",
                "json",
                "-o",
                str(path),
                "--no-progress",
            ]
        )
        == 0
    )
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def priced(tmp_path_factory, fuzz_model_dir):
    """A saved profile with every call priced (a cost summary, per-call costs, tool result costs)."""
    path = tmp_path_factory.mktemp("priced") / "run.json"
    assert (
        main(
            [
                "profile",
                str(FIXTURES / "good_transcript.json"),
                "--model",
                str(fuzz_model_dir),
                "-f",
                "json",
                "--price",
                "1/2/0.1",
                "-o",
                str(path),
                "--no-progress",
            ]
        )
        == 0
    )
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def fuzz_model_dir(tmp_path_factory):
    from conftest import CHATML, train_tiny_tokenizer, write_json

    directory = tmp_path_factory.mktemp("model")
    train_tiny_tokenizer().save(str(directory / "tokenizer.json"))
    write_json(directory / "tokenizer_config.json", {"chat_template": CHATML, "eos_token": "<|im_end|>"})
    return directory


def run_all(path, capsys, tmp_path) -> list[tuple[int, str, str]]:
    out = []
    for command in COMMANDS:
        code = main([command[0], str(path), *command[1:]])
        o, e = capsys.readouterr()
        out.append((code, o, e))
    report = tmp_path / "r.html"
    code = main(["report", str(path), "-o", str(report)])
    o, e = capsys.readouterr()
    out.append((code, o, e))
    return out


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda d, text: text[:-1] + ', "extra": ' + "[" * 1000 + "]" * 1000 + "}", "nested too deeply"),
        (lambda d, text: text.replace('"cumulative": ', '"cumulative": [1], "x": ', 1), "calls[0].cumulative"),
        (
            lambda d, text: text.replace('"model": {"name": "', '"model": {"name": "\\ud800', 1),
            "model.name: a lone surrogate",
        ),
        (lambda d, text: text.replace('"total": null', '"total": NaN', 1), "NaN is not a number JSON allows"),
        (lambda d, text: text.replace('"total": null', '"total": Infinity', 1), "Infinity is not a number"),
    ],
)
def test_hostile_saved_profile(saved, tmp_path, capsys, change, says):
    text = change(saved, json.dumps(saved))
    assert text != json.dumps(saved)
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    for code, _out, err in run_all(path, capsys, tmp_path):
        assert code == 2, err
        assert err.startswith(f"tokprof: error: {path}: ") and says in err and err.count("\n") == 1, err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("n", range(int(os.environ.get("TOKPROF_FUZZ_MUTANTS") or 24)))
def test_saved_profile_fuzz(saved, tmp_path, capsys, n):
    rng = random.Random(f"33-saved-{n}")
    value = json.loads(json.dumps(saved))
    places = _places(value)[1:]
    what = []
    for _ in range(rng.randint(1, 3)):
        place = rng.choice(places)
        try:
            _get(value, place)
        except (KeyError, IndexError, TypeError):
            continue
        new = rng.choice(ODD_VALUES + STRANGE_STRINGS[:12])
        value = _replace(value, place, new)
        what.append(f"{place} = {dump(new)[:30]!r}")
    path = tmp_path / "mutant.json"
    path.write_text(dump(value), encoding="utf-8")
    for code, _out, err in run_all(path, capsys, tmp_path):
        assert code in (0, 2), (what, err[-1500:])
        assert "Traceback" not in err, what
        if code == 2:
            assert err.startswith("tokprof: error: ") and err.count("\n") == 1, (what, err)
    code = main(["profile", str(path), "-f", "json"])
    out, _ = capsys.readouterr()
    if code == 0:
        json.loads(out, parse_constant=lambda name: pytest.fail(f"{what}: {name} written back"))


def swap_type(value, rng: random.Random):
    """A value of another JSON type where the schema wants this one: a number in a list, a string as a
    number, an object as a list, a list as a string."""
    if isinstance(value, bool):
        return rng.choice(["true", 1, None])
    if isinstance(value, (int, float)):
        return rng.choice([[value], str(value), {"n": value}, -value - 1, value + 0.5, 10**16])
    if isinstance(value, str):
        return rng.choice([[value], 7, {"s": value}, value + "\ud800"])
    if isinstance(value, list):
        return rng.choice([json.dumps(value), {"0": value}, value + value, [[value]]])
    if isinstance(value, dict):
        return rng.choice([list(value.values()), json.dumps(value), {**value, "extra": 1}, {}])
    return rng.choice([0, "", [], {}])


@pytest.mark.parametrize("n", range(int(os.environ.get("TOKPROF_FUZZ_MUTANTS") or 24)))
def test_priced_saved_profile_fuzz(priced, tmp_path, capsys, n):
    """Type-swapping mutants of a priced profile (#33: a list where a number belongs in the cost
    summary was a TypeError): every command ends with 0, or 2 and one line naming the field."""
    rng = random.Random(f"33-priced-{n}")
    value = json.loads(json.dumps(priced))
    places = [p for p in _places(value)[1:] if p[0] in ("summary", "calls", "model", "source", "warnings")]
    what = []
    for _ in range(rng.randint(1, 2)):
        place = rng.choice(places)
        try:
            current = _get(value, place)
        except (KeyError, IndexError, TypeError):
            continue
        new = swap_type(current, rng)
        value = _replace(value, place, new)
        what.append(f"{place} = {dump(new)[:30]!r}")
    path = tmp_path / "mutant.json"
    path.write_text(dump(value), encoding="utf-8")
    for code, _out, err in run_all(path, capsys, tmp_path):
        assert code in (0, 2), (what, err[-1500:])
        assert "Traceback" not in err, what
        if code == 2:
            assert err.startswith(f"tokprof: error: {path}: ") and err.count("\n") == 1, (what, err)
