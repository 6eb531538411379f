"""The tree is clean under ruff (configured in pyproject.toml), lint and format, as pre-commit checks it."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


def test_ruff_is_clean():
    ruff = shutil.which("ruff") or (pytest.importorskip("ruff") and None)
    command = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    result = subprocess.run(
        [*command, "check", "--no-cache", "--quiet", str(ROOT)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]


def test_ruff_format_is_clean():
    ruff = shutil.which("ruff") or (pytest.importorskip("ruff") and None)
    command = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    folders = [str(ROOT / name) for name in ("tokprof", "tests", "benchmarks", "samples")]
    result = subprocess.run(
        [*command, "format", "--check", "--no-cache", "--quiet", *folders],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, "run: ruff format tokprof tests benchmarks samples\n" + result.stdout[-3000:]
