"""Endless and odd files as input (#33 item 6): /dev/zero (or a FIFO) given as a chat template,
tools, system prompt, configuration, baseline, saved profile or log is read no further than its cap
(tokprof.base.bounded), and the run ends with one line naming the file and the cap, exit code 2."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import FIXTURES
from tokprof.base import bounded
from tokprof.frontends.cli import main

LOG = FIXTURES / "good_transcript.json"
ZERO = "/dev/zero"
pytestmark = pytest.mark.skipif(not Path(ZERO).exists(), reason="no /dev/zero here")


@pytest.fixture(autouse=True)
def small_caps(monkeypatch):
    """Caps of 1 MiB, so that each case reads 1 MiB of zeros, not hundreds."""
    for what in bounded.CAPS:
        monkeypatch.setenv("TOKPROF_MAX_READ_" + what.upper().replace(" ", "_"), "1")


def one_line(args, capsys) -> str:
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.startswith("tokprof: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    "args, what",
    [
        (["profile", str(LOG), "--chat-template", ZERO], "chat template"),
        (["profile", str(LOG), "--tools", ZERO], "tools file"),
        (["profile", str(LOG), "--system", ZERO], "system prompt"),
        (["tools", "--tools", ZERO], "tools file"),
    ],
)
def test_dev_zero_is_read_no_further_than_its_cap(args, what, capsys):
    err = one_line(args, capsys)
    assert f"{ZERO}: " in err and f"over the 1 MiB a {what} may have" in err, err
    assert "TOKPROF_MAX_READ_" + what.upper().replace(" ", "_") in err


def test_dev_zero_as_a_log(capsys):
    assert f"{ZERO}: not a log format tokprof reads: looks like a binary file" in one_line(["profile", ZERO], capsys)


def test_a_log_line_over_the_cap(tmp_path, capsys):
    log = tmp_path / "records.jsonl"
    log.write_text('{"messages": [{"role": "user", "content": "' + "x" * (2 * bounded.MIB) + '"}]}\n')
    err = one_line(["profile", str(log)], capsys)
    assert f"{log}: line 1: a line over the 1 MiB a log line may have" in err, err


def test_a_configuration_that_is_a_device(capsys):
    assert f"{ZERO}: not a regular file" in one_line(["check", str(LOG), "--config", ZERO], capsys)


def test_a_configured_baseline_that_is_endless(tmp_path, capsys):
    config = tmp_path / "tokprof.toml"
    config.write_text(f'baseline = "{ZERO}"\n[budgets]\nbilled_input = {{ max_increase = "10%" }}\n')
    err = one_line(["check", str(LOG), "--config", str(config)], capsys)
    assert "over the 1 MiB a baseline may have" in err, err


def test_an_endless_saved_profile(tmp_path, capsys):
    big = tmp_path / "run.json"
    big.write_bytes(b'{"kind": "profile", "schema_version": 3, "calls": [' + b" " * (2 * bounded.MIB) + b"]}")
    err = one_line(["profile", str(big)], capsys)
    assert "over the 1 MiB a saved profile may have" in err, err


def test_the_helper_reads_up_to_the_cap(tmp_path):
    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 1000)
    assert bounded.read_bytes(exact, "chat template", 1000) == b"x" * 1000
    with pytest.raises(bounded.TooLarge) as error:
        bounded.read_bytes(exact, "chat template", 999)
    assert "over the 999 bytes a chat template may have" in error.value.strerror


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_without_a_writer_never_waits(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert "is a pipe, not a file" in one_line(["profile", str(fifo)], capsys)
    assert "the chat template is empty" in one_line(["profile", str(LOG), "--chat-template", str(fifo)], capsys)
    assert bounded.read_bytes(fifo, "system prompt") == b""
