"""tokprof serve against hostile clients (#33): cross-site requests, odd Host headers, model names
that cannot be echoed. In-process (Starlette's test client), hand-made requests."""

from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

from tokprof.frontends import serve

BODY = json.dumps({"model": "qwen2.5", "messages": [{"role": "user", "content": "hi"}]}).encode()


@pytest.fixture(scope="module")
def client():
    return TestClient(serve.create_app(["qwen2.5"]), base_url="http://127.0.0.1", raise_server_exceptions=False)


@pytest.mark.parametrize(
    "origin, status",
    [
        ("http://evil.example", 403),
        ("null", 403),
        ("http://localhost.evil.example", 403),
        ("javascript:alert(1)", 403),
        ("http://127.0.0.1:8080", 200),
        ("http://localhost:3000", 200),
        ("http://[::1]:8000", 200),
    ],
)
def test_foreign_origin_is_refused(client, origin, status):
    response = client.post("/v1/count", content=BODY, headers={"origin": origin, "content-type": "application/json"})
    assert response.status_code == status, response.text
    if status == 403:
        assert response.json()["error"]["type"] == "permission_error"


@pytest.mark.parametrize(
    "content_type, status",
    [
        ("text/plain", 415),
        ("application/x-www-form-urlencoded", 415),
        ("multipart/form-data; boundary=x", 415),
        ("application/json", 200),
        ("application/json; charset=utf-8", 200),
        ("application/vnd.api+json", 200),
        (None, 200),
    ],
)
def test_body_must_be_declared_json(client, content_type, status):
    headers = {} if content_type is None else {"content-type": content_type}
    response = client.post("/v1/count", content=BODY, headers=headers)
    assert response.status_code == status, response.text


@pytest.mark.parametrize(
    "host, status",
    [
        ("localhost:80@evil.example", 403),
        ("localhost@evil.example", 403),
        ("evil.example", 403),
        ("localhost:80 evil.example", 403),
        ("localhost/x", 403),
        ("", 403),
        ("localhost", 200),
        ("localhost:8080", 200),
        ("127.0.0.1:1", 200),
        ("[::1]:80", 200),
        ("[::1]", 200),
    ],
)
def test_host_check(client, host, status):
    response = client.get("/health", headers={"host": host})
    assert response.status_code == status, (host, response.text)


@pytest.mark.parametrize("model", ["\\ud800", "claude-\\udfff", "a\\u202eb", "x\\u001b[31m", "q\\u0085"])
def test_unechoable_model_name_is_400(client, model):
    for route in ("/v1/count", "/v1/messages/count_tokens"):
        raw = (f'{{"model": "{model}", "messages": [{{"role": "user", "content": "hi"}}]}}').encode()
        response = client.post(route, content=raw)
        assert response.status_code == 400, response.text
        assert response.json()["error"]["type"] == "invalid_request_error"
        text = response.content.decode("utf-8")
        assert not any(c in text for c in "\u202e\x1b\x85")
