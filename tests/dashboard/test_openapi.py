"""docs/dashboard-openapi.json is what the code generates, and the answers of a real
server match the schemas it states."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import jsonschema

from rawtrio.dashboard.openapi import openapi
from tests.dashboard.support import Dashboard

DOC = Path(__file__).resolve().parents[2] / "docs" / "dashboard-openapi.json"


def test_the_committed_openapi_file_matches_the_code() -> None:
    written = subprocess.run(
        [sys.executable, "-m", "rawtrio.dashboard.openapi"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(written) == json.loads(DOC.read_text()), (
        "regenerate it: python -m rawtrio.dashboard.openapi > docs/dashboard-openapi.json"
    )


def check(doc: dict[str, Any], method: str, path: str, status: int, answer: Any) -> None:
    """`answer` validates against the schema the document gives for it."""
    response = doc["paths"][path][method.lower()]["responses"][str(status)]
    schema = response["content"]["application/json"]["schema"]
    resolver = {"components": doc["components"], **schema}
    jsonschema.validate(answer, resolver)


def test_real_answers_match_the_openapi_schemas(dash: Dashboard, work: Path) -> None:
    doc = openapi()
    check(doc, "GET", "/api/bootstrap", 200, dash.ok("GET", "/api/bootstrap"))
    created = dash.new_session(work, title="schema")
    check(doc, "POST", "/api/sessions", 201, created)
    sid = created["id"]
    one = "/api/sessions/{session_id}"
    receipt = dash.submit(sid, "use a tool")
    check(doc, "POST", one + "/turns", 202, receipt)
    check(
        doc, "GET", "/api/operations/{operation_id}", 200, dash.wait_ended(receipt["operation_id"])
    )
    check(doc, "GET", "/api/sessions", 200, dash.ok("GET", "/api/sessions"))
    check(doc, "GET", "/api/sessions", 200, dash.ok("GET", "/api/sessions", params={"q": "tool"}))
    check(doc, "GET", one, 200, dash.ok("GET", f"/api/sessions/{sid}"))
    check(doc, "GET", one + "/history", 200, dash.ok("GET", f"/api/sessions/{sid}/history"))
    check(doc, "GET", one + "/usage", 200, dash.ok("GET", f"/api/sessions/{sid}/usage"))
    check(doc, "POST", one + "/cancel", 200, dash.ok("POST", f"/api/sessions/{sid}/cancel"))
    check(doc, "POST", one + "/mode", 200,
          dash.ok("POST", f"/api/sessions/{sid}/mode", json={"mode": "plan"}))  # fmt: skip
    body = {"client_request_id": str(uuid.uuid4())}
    check(doc, "POST", one + "/compact", 202,
          dash.ok("POST", f"/api/sessions/{sid}/compact", 202, json=body))  # fmt: skip
    r = dash.client.get("/api/sessions/nope")
    check(doc, "GET", one, 404, r.json())
