"""The fake model server (real HTTP on loopback) and a short private place per test; for
the attach client's tests also the headless tests' fake model (`fake_model`) and a short
state directory (`state`: a Unix socket path has at most 107 bytes)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.headless.conftest import SCENARIO as HEADLESS_SCENARIO
from tests.headless.conftest import FakeModel, fake_model_process
from tests.headless.support import LIVENESS_S, Isolation
from tests.host.support import Place, short_runtime_dir

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
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("fake-model") / "scenario.json"
    path.write_text(json.dumps(SCENARIO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rawtrio.testing.fake_model", "--scenario", str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield str(json.loads(proc.stdout.readline())["base_url"])
    finally:
        proc.terminate()
        proc.wait(timeout=LIVENESS_S)
        if proc.stdout is not None:
            proc.stdout.close()


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
