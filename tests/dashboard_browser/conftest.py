"""Fixtures of the browser tests: the fake model (on a thread of the test process), a
private place, a running dashboard on a host, and a fresh Chromium profile per test."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from rawtrio.testing.fake_model import FakeModelServer, Scenario
from tests.conftest import requires
from tests.dashboard_browser.support import CHROMIUM, Dashboard, open_browser
from tests.headless.support import Isolation, fake_model_in_thread
from tests.host.support import Place, short_runtime_dir

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Playwright

SCENARIO: dict[str, Any] = {"rules": [{"match": "*", "replies": [{"text": "Hello."}]}]}


@pytest.fixture(scope="module")
def model(request: pytest.FixtureRequest) -> Iterator[FakeModelServer]:
    """The fake model serving the test module's `SCENARIO`."""
    script = getattr(request.module, "SCENARIO", SCENARIO)
    with fake_model_in_thread(Scenario.from_dict(script)) as server:
        yield server


@pytest.fixture
def place(tmp_path: Path, model: FakeModelServer) -> Iterator[Place]:
    with short_runtime_dir() as runtime:
        yield Place(Isolation(tmp_path), runtime, model.base_url)


@pytest.fixture
def dashboard(place: Place) -> Iterator[Dashboard]:
    """`rawtrio dashboard` for the place; stopped with SIGTERM afterwards."""
    running = Dashboard.start(place)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    requires(
        importlib.util.find_spec("playwright") is not None,
        "the playwright package is not installed (pip install -e '.[dev]')",
    )
    requires(
        CHROMIUM.exists() and os.access(CHROMIUM, os.X_OK),
        f"{CHROMIUM} is missing (apt-get install chromium; `make chromium` under CI)",
    )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture
def browser(playwright: Playwright, tmp_path: Path) -> Iterator[BrowserContext]:
    """A fresh profile. The test fails if a page broke the CSP or threw an uncaught error."""
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    problems: list[str] = []
    with open_browser(playwright, profile) as context:
        context.on(
            "console",
            lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None,
        )
        context.on("weberror", lambda e: problems.append(str(e.error)))
        yield context
    assert problems == [], problems
