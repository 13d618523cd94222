from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rawtrio.hooks import HookEvent, HookReceipt, HookRunner, HookSpec

#: Small real-time settings: these tests run real processes.
GRACE_S = 0.2
#: Liveness bound for a single test (never a performance assert).
LIVENESS_S = 30


def py(code: str) -> tuple[str, ...]:
    """An argv running `code` with this interpreter (no shell involved)."""
    return (sys.executable, "-c", code)


def hook(event: HookEvent, code: str, **kwargs: Any) -> HookSpec:
    return HookSpec(event, py(code), **kwargs)


MakeRunner = Callable[..., tuple[HookRunner, list[HookReceipt]]]


@pytest.fixture
def make_runner(tmp_path: Path) -> MakeRunner:
    """A runner on `tmp_path` whose receipts are collected in the returned list."""

    def make(*hooks: HookSpec, **kwargs: Any) -> tuple[HookRunner, list[HookReceipt]]:
        receipts: list[HookReceipt] = []
        runner = HookRunner(
            hooks,
            session_id="sess-hooks",
            cwd=tmp_path,
            grace_s=GRACE_S,
            on_receipt=receipts.append,
            **kwargs,
        )
        return runner, receipts

    return make
