"""Places for attach tests: a short state directory (a Unix socket path has at most 107
bytes), and the fake model server for the runs that happen in the client's own process."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.headless.conftest import SCENARIO, FakeModel, fake_model_process


@pytest.fixture(scope="module")
def fake_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeModel]:
    with fake_model_process(SCENARIO, tmp_path_factory.mktemp("fake-model")) as fake:
        yield fake


@pytest.fixture
def state() -> Iterator[Path]:
    """A state directory with a short path, so the host's socket fits beside it."""
    folder = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    try:
        (folder / "state").mkdir(mode=0o700)
        yield folder / "state"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
