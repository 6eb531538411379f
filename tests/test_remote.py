"""Sessions from object storage: a folder of sessions uploaded to a local S3 server (moto's server
mode on 127.0.0.1, a free port), profiled through s3:// and file:// URLs, equals the local run.
Fixtures: test_tables' hand-written sessions."""

from __future__ import annotations

import json

import pytest
from test_tables import folder, run

pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")


@pytest.fixture
def s3(monkeypatch):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "FSSPEC_S3_ENDPOINT_URL": endpoint,
        "AWS_ENDPOINT_URL": endpoint,
    }.items():
        monkeypatch.setenv(key, value)
    import fsspec.config

    fsspec.config.conf.clear()
    fsspec.config.set_conf_env(fsspec.config.conf)
    try:
        yield boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    finally:
        server.stop()
        fsspec.config.conf.clear()


def test_s3_prefix_equals_the_local_folder(tmp_path, model_dir, capsys, s3):
    logs = folder(tmp_path / "logs")
    s3.create_bucket(Bucket="team-logs")
    for path in sorted(p for p in logs.rglob("*") if p.is_file()):
        s3.put_object(Bucket="team-logs", Key=f"day1/{path.relative_to(logs)}", Body=path.read_bytes())
    args = ["--model", str(model_dir), "-f", "json", "--no-progress", "-j", "1"]
    code, local, err = run(["profile", str(logs), *args], capsys)
    assert code == 0, err
    code, remote, err = run(["profile", "s3://team-logs/day1/", *args], capsys)
    assert code == 0, err
    a, b = json.loads(local), json.loads(remote)
    assert [(r["session"], r["path"], r["billed_input"]) for r in a["sessions"]] == [
        (r["session"], r["path"], r["billed_input"]) for r in b["sessions"]
    ]
    assert a["totals"] == b["totals"]
    code, via_file, err = run(["profile", f"file://{logs}/", *args], capsys)
    assert code == 0, err
    assert json.loads(via_file)["totals"] == a["totals"]


def test_another_stores_missing_package_is_named_not_the_s3_extra(capsys):
    pytest.importorskip("fsspec")
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("gcsfs is installed")
    code, _, err = run(["profile", "gs://bucket/logs/"], capsys)
    assert code == 2 and "gcsfs" in err and "tokprof[s3]" not in err  # the s3 extra would not install gcsfs


def test_a_missing_bucket_is_one_line(tmp_path, model_dir, capsys, s3):
    code, _, err = run(["profile", "s3://no-such-bucket/x/", "--model", str(model_dir), "--no-progress"], capsys)
    assert code == 2 and "no-such-bucket" in err and "Traceback" not in err
