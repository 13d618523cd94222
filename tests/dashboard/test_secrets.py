"""Nothing secret reaches the browser side: after a turn that used a secret variable (from
an environment variable) and the API key everywhere they can appear — model text split
across deltas, thinking, tool arguments and output, a hook's environment — no API answer,
no event on the stream, no page and no file the dashboard wrote holds their values (the
secrets test of the database, tests/headless/test_secrets_on_disk.py, for the browser)."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.support import KEY, Dashboard
from tests.headless.support import Isolation

SECRET = "S3CRET-DASH-VALUE-98765"
MARKER = "[redacted:token]"

SCENARIO: dict[str, Any] = {
    "rules": [
        {
            "match": "leak the secret",
            "replies": [
                {
                    "thinking": f"The token is {SECRET} and the key {KEY}.",
                    "text": f"The token is {SECRET}, the key {KEY} (oops).",
                    "chunk": 3,
                    "tool_calls": [
                        {"name": "bash", "arguments": {"command": f"echo out {SECRET} {KEY}"}}
                    ],
                },
                {"text": f"Done; it printed {SECRET}."},
            ],
        },
        {"match": "*", "replies": [{"text": "Hello."}]},
    ]
}
HOOK = "import os, sys; sys.stdin.read(); print('hook saw', os.environ['TOKEN'])"
#: The secret comes from an environment variable of the dashboard's process.
DASHBOARD_ENV = {"DASH_SECRET": SECRET}


@pytest.fixture(scope="module", autouse=True)
def config(iso: Isolation) -> Path:
    path = iso.home / ".config" / "rawtrio" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"""
[variables.token]
env = "DASH_SECRET"
secret = true

[[hooks]]
event = "PreToolUse"
match = "bash"
command = [{json.dumps(sys.executable)}, "-c", {json.dumps(HOOK)}]
env = {{ TOKEN = {{ var = "token" }} }}
"""
    )
    return path


def test_no_secret_reaches_an_answer_the_stream_or_a_page(
    dash: Dashboard, work: Path, iso: Isolation
) -> None:
    texts: list[str] = []

    def get(path: str, **kwargs: Any) -> Any:
        r = dash.client.get(path, **kwargs)
        texts.append(r.text)
        return r.json()

    created = dash.new_session(work)
    sid = created["id"]
    texts.append(json.dumps(created))
    with dash.stream(sid, last_event_id=0) as stream:
        stream.wait_event("hello")
        receipt = dash.submit(sid, "leak the secret")
        texts.append(json.dumps(receipt))
        stream.wait_event("turn_ended")
        raw_stream = "\n".join(stream.raw)
    texts.append(json.dumps(dash.wait_ended(receipt["operation_id"])))
    get("/api/bootstrap")
    get("/api/sessions")
    get("/api/sessions", params={"q": "token"})
    get(f"/api/sessions/{sid}")
    get(f"/api/sessions/{sid}/usage")
    history = get(f"/api/sessions/{sid}/history", params={"limit": 100})
    get(f"/api/operations/{receipt['operation_id']}")
    texts.append(dash.client.get("/").text)
    r = dash.client.post(f"/api/sessions/{sid}/turns", json={
        "client_request_id": str(uuid.uuid4()), "text": "x", "secret": SECRET})  # fmt: skip
    texts.append(r.text)  # an error about a body never echoes a value from it
    types = {e["type"] for e in history["events"]}
    assert {"hook_ran", "tool_call_finished", "text_delta", "thinking_delta"} <= types
    everything = "\n".join([*texts, raw_stream])
    assert MARKER in raw_stream
    assert MARKER in everything
    for value in (SECRET, KEY):
        assert value not in raw_stream
        assert value not in everything
    for path in (iso.root / "state").rglob("*"):
        if path.is_file() and not path.name.endswith((".db", "-wal", "-shm")):
            data = path.read_bytes()
            assert SECRET.encode() not in data, path
            assert KEY.encode() not in data, path
    assert SECRET not in dash.output()
    assert KEY not in dash.output()
