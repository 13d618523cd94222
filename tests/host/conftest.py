"""The fake model server (real HTTP on loopback) and a short private place per test; for
the attach client's tests also the headless tests' fake model (`fake_model`) and a short
state directory (`state`: a Unix socket path has at most 107 bytes)."""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rawtrio.testing.fake_model import FakeModelServer, Scenario
from tests.headless.conftest import SCENARIO as HEADLESS_SCENARIO
from tests.headless.conftest import FakeModel, fake_model_process
from tests.headless.support import Isolation, fake_model_in_thread
from tests.host.support import HostProcess, Place, short_runtime_dir

SCENARIO: dict[str, Any] = {
    "rules": [
        {
            "match": "sleep a while",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]},
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
    """The fake model serving the test module's `SCENARIO` (this folder's by default)."""
    script = getattr(request.module, "SCENARIO", SCENARIO)
    with fake_model_in_thread(Scenario.from_dict(script)) as server:
        yield server


@pytest.fixture(scope="module")
def base_url(model: FakeModelServer) -> str:
    return model.base_url


@pytest.fixture
def host(place: Place) -> Iterator[HostProcess]:
    """A running `rawtrio serve` (never idle-exiting) for the place; stopped with SIGTERM
    afterwards, which it must survive cleanly."""
    proc = HostProcess.start(place, "--idle-exit", "0")
    try:
        proc.wait_registered()
        yield proc
    finally:
        proc.proc.send_signal(signal.SIGTERM)
        try:
            proc.wait_exit()
        except Exception:
            proc.kill()
            raise


def scenario(*rules: dict[str, Any]) -> dict[str, Any]:
    """This folder's script with `rules` added before its catch-all."""
    *named, catch_all = SCENARIO["rules"]
    return {"rules": [*named, *rules, catch_all]}


@pytest.fixture
def place(tmp_path: Path, base_url: str) -> Iterator[Place]:
    with short_runtime_dir() as runtime:
        yield Place(Isolation(tmp_path), runtime, base_url)


@pytest.fixture(scope="module")
def fake_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeModel]:
    with fake_model_process(HEADLESS_SCENARIO, tmp_path_factory.mktemp("fake-model")) as fake:
        yield fake


@pytest.fixture
def state() -> Iterator[Path]:
    """A state directory (0700) with a short path, so the host's socket fits beside it."""
    folder = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    try:
        (folder / "state").mkdir(mode=0o700)
        yield folder / "state"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
