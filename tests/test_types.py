"""The package is clean under mypy (configured in pyproject.toml): .ci/run checks it with the tests."""

from __future__ import annotations

from conftest import ROOT


def test_mypy_is_clean():
    from mypy import api

    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--no-error-summary",
                                "--cache-dir", str(ROOT / ".mypy_cache")])
    assert status == 0, out + err
