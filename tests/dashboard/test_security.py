"""What every request must pass and every answer carries, over a real socket: the token,
the Host and Origin checks, the security headers, the body limits and the error shape."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.dashboard.support import Dashboard
from tests.headless.support import LIVENESS_S

CSP_PARTS = ("default-src 'none'", "script-src 'self'", "frame-ancestors 'none'")


def raw(dash: Dashboard, method: str, path: str, **kwargs: object) -> httpx2.Response:
    """A request with no token unless the test adds one."""
    with httpx2.Client(base_url=dash.url, timeout=LIVENESS_S) as client:
        return client.request(method, path, **kwargs)  # type: ignore[arg-type]


def assert_error(r: httpx2.Response, status: int, code: str) -> None:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    assert "Traceback" not in r.text
    assert_security_headers(r)


def assert_security_headers(r: httpx2.Response) -> None:
    csp = r.headers["content-security-policy"]
    for part in CSP_PARTS:
        assert part in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert r.headers["x-frame-options"] == "DENY"
    assert "access-control-allow-origin" not in r.headers
    assert "server" not in r.headers


@pytest.fixture
def bearer(dash: Dashboard) -> dict[str, str]:
    return {"Authorization": f"Bearer {dash.token}"}


def test_no_token_is_401(dash: Dashboard) -> None:
    r = raw(dash, "GET", "/api/bootstrap")
    assert_error(r, 401, "unauthorized")
    assert r.headers["www-authenticate"] == "Bearer"


def test_a_wrong_token_is_401(dash: Dashboard) -> None:
    for value in (f"Bearer {dash.token}x", f"Bearer {dash.token[:-1]}", "Basic abc", dash.token):
        assert_error(raw(dash, "GET", "/api/bootstrap", headers={"Authorization": value}), 401,
                     "unauthorized")  # fmt: skip


def test_a_token_in_the_query_is_refused_even_with_the_header(
    dash: Dashboard, bearer: dict[str, str]
) -> None:
    for params in ({"token": dash.token}, {"access_token": dash.token}, {"x": dash.token},
                   {"token": "anything"}):  # fmt: skip
        r = raw(dash, "GET", "/api/sessions", params=params, headers=bearer)
        assert_error(r, 400, "token_in_query")
        assert dash.token not in r.text


def test_a_foreign_origin_is_403(dash: Dashboard, bearer: dict[str, str]) -> None:
    for origin in (
        "http://evil.example",
        "null",
        f"http://127.0.0.1:{dash.port + 1}",
        f"https://127.0.0.1:{dash.port}",
        f"http://127.0.0.1.evil.example:{dash.port}",
    ):
        r = raw(dash, "POST", "/api/sessions", json={}, headers={**bearer, "Origin": origin})
        assert_error(r, 403, "forbidden_origin")
    r = raw(dash, "GET", "/api/bootstrap", headers={**bearer, "Sec-Fetch-Site": "cross-site"})
    assert_error(r, 403, "forbidden_origin")
    own = raw(dash, "GET", "/api/bootstrap", headers={**bearer, "Origin": dash.url})
    assert own.status_code == 200


def test_a_rebinding_host_is_403_for_the_api_and_the_page(
    dash: Dashboard, bearer: dict[str, str]
) -> None:
    for host in (f"evil.example:{dash.port}", "127.0.0.1", f"localhost:{dash.port + 1}", ""):
        for path in ("/api/bootstrap", "/"):
            r = raw(dash, "GET", path, headers={**bearer, "Host": host})
            assert_error(r, 403, "forbidden_host")
    ok = raw(dash, "GET", "/api/bootstrap", headers={**bearer, "Host": f"localhost:{dash.port}"})
    assert ok.status_code == 200


def test_the_event_stream_with_a_wrong_token_is_401(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    path = f"/api/sessions/{sid}/events"
    assert_error(raw(dash, "GET", path, headers={"Authorization": "Bearer nope"}), 401,
                 "unauthorized")  # fmt: skip
    assert_error(raw(dash, "GET", path, params={"token": dash.token}), 400, "token_in_query")
    r = raw(dash, "GET", path, headers={"Authorization": f"Bearer {dash.token}", "Origin":
                                        "http://evil.example"})  # fmt: skip
    assert_error(r, 403, "forbidden_origin")


def test_an_oversized_body_is_413(dash: Dashboard, work: Path, bearer: dict[str, str]) -> None:
    sid = dash.new_session(work)["id"]
    limit = dash.ok("GET", "/api/bootstrap")["limits"]["max_body_bytes"]
    big = b'{"client_request_id": "a", "text": "' + b"x" * limit + b'"}'
    headers = {**bearer, "Content-Type": "application/json"}
    r = raw(dash, "POST", f"/api/sessions/{sid}/turns", content=big, headers=headers)
    assert_error(r, 413, "payload_too_large")
    assert r.json()["error"]["details"]["limit"] == limit

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while reading
        yield b'{"client_request_id": "b", "text": "'
        for _ in range(limit // 65536 + 1):
            yield b"y" * 65536
        yield b'"}'

    r = raw(dash, "POST", f"/api/sessions/{sid}/turns", content=chunks(), headers=headers)
    assert_error(r, 413, "payload_too_large")
    assert dash.history(sid) == []  # nothing started


def test_malformed_bodies_get_400_or_422_naming_what_is_wrong(
    dash: Dashboard, work: Path, bearer: dict[str, str]
) -> None:
    sid = dash.new_session(work)["id"]
    path = f"/api/sessions/{sid}/turns"
    headers = {**bearer, "Content-Type": "application/json"}
    for content in (b"{not json", b'{"text": NaN}', b"\xff\xfe", b""):
        assert_error(raw(dash, "POST", path, content=content, headers=headers), 400,
                     "invalid_json")  # fmt: skip
    lone = b'{"client_request_id": "a", "text": "\\ud800"}'
    r = raw(dash, "POST", path, content=lone, headers=headers)
    assert_error(r, 400, "invalid_json")
    assert "\\ud800" in r.json()["error"]["message"]
    for body, where in (
        (b"[1, 2]", ["body"]),
        (b'{"text": "hi"}', ["body", "client_request_id"]),
        (b'{"client_request_id": "a b", "text": "hi"}', ["body", "client_request_id"]),
        (b'{"client_request_id": "a", "text": ""}', ["body", "text"]),
        (b'{"client_request_id": "a", "text": 5}', ["body", "text"]),
        (b'{"client_request_id": "a", "text": "hi", "extra": 1}', ["body", "extra"]),
    ):
        r = raw(dash, "POST", path, content=body, headers=headers)
        assert_error(r, 422, "validation_failed")
        assert r.json()["error"]["details"]["errors"][0]["loc"] == where
    r = raw(dash, "POST", path, content=b'{"client_request_id": "a", "text": "hi"}',
            headers={**bearer, "Content-Type": "text/plain"})  # fmt: skip
    assert_error(r, 415, "unsupported_media_type")
    assert dash.history(sid) == []  # none of these started anything


def test_unknown_paths_and_methods_answer_in_the_error_shape(
    dash: Dashboard, bearer: dict[str, str]
) -> None:
    assert_error(raw(dash, "GET", "/api/nothing-here", headers=bearer), 404, "not_found")
    assert_error(raw(dash, "GET", "/nothing-here"), 404, "not_found")
    r = raw(dash, "PUT", "/api/bootstrap", headers=bearer)
    assert_error(r, 405, "method_not_allowed")
    assert_error(raw(dash, "GET", "/api/operations/op_nope", headers=bearer), 404,
                 "unknown_operation")  # fmt: skip
    assert_error(raw(dash, "GET", "/api/sessions/nope", headers=bearer), 404, "unknown_session")


def test_the_page_needs_no_token_and_carries_the_headers(dash: Dashboard) -> None:
    r = raw(dash, "GET", "/")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert r.headers["cache-control"] == "no-store"
    assert dash.token not in r.text
    assert_security_headers(r)


def test_every_api_answer_carries_the_headers(dash: Dashboard, work: Path) -> None:
    sid = dash.new_session(work)["id"]
    for r in (
        dash.client.get("/api/bootstrap"),
        dash.client.get("/api/sessions"),
        dash.client.get(f"/api/sessions/{sid}/history"),
    ):
        assert r.status_code == 200
        assert r.headers["cache-control"] == "no-store"
        assert_security_headers(r)
    with dash.stream(sid) as stream:
        stream.wait_event("hello")
        assert stream.status == 200


def test_a_websocket_upgrade_is_not_served(dash: Dashboard) -> None:
    with socket.create_connection(("127.0.0.1", dash.port), timeout=LIVENESS_S) as s:
        s.sendall(
            f"GET /api/bootstrap HTTP/1.1\r\nHost: 127.0.0.1:{dash.port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".encode()
        )
        answer = s.recv(4096).decode(errors="replace")
    assert not answer.startswith("HTTP/1.1 101"), answer
