"""A fake model per test module (its `SCENARIO`, or this folder's) and a running
`rawtrio dashboard` per module, isolated from the user's files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rawtrio.testing.fake_model import FakeModelServer, Scenario
from tests.dashboard.support import Dashboard
from tests.headless.support import Isolation, fake_model_in_thread

SCENARIO: dict[str, Any] = {
    "rules": [
        {
            "match": "sleep a while",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 60"}}]},
                {"text": "slept"},
            ],
        },
        {
            "match": "use a tool",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo tool-output"}}]},
                {"text": "The tool said tool-output."},
            ],
        },
        {"match": "*", "replies": [{"text": "Hello from the fake model."}]},
    ]
}


@pytest.fixture(scope="module")
def model(request: pytest.FixtureRequest) -> Iterator[FakeModelServer]:
    script = getattr(request.module, "SCENARIO", SCENARIO)
    with fake_model_in_thread(Scenario.from_dict(script)) as server:
        yield server


@pytest.fixture(scope="module")
def iso(tmp_path_factory: pytest.TempPathFactory) -> Isolation:
    return Isolation(tmp_path_factory.mktemp("dash"))


@pytest.fixture(scope="module")
def dash(
    iso: Isolation, model: FakeModelServer, request: pytest.FixtureRequest
) -> Iterator[Dashboard]:
    """`rawtrio dashboard` for the module (with the module's `DASHBOARD_ARGS`)."""
    args = getattr(request.module, "DASHBOARD_ARGS", ())
    env = getattr(request.module, "DASHBOARD_ENV", {})
    server = Dashboard.start(iso, model.base_url, *args, env=env)
    try:
        yield server
    finally:
        code = server.stop()
        assert code == 0, server.output()
        assert "Traceback" not in server.output(), server.output()


@pytest.fixture
def work(iso: Isolation, tmp_path: Path) -> Path:
    """A project folder of the test's own."""
    folder = tmp_path / "project"
    folder.mkdir()
    return folder
