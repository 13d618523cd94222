from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from rawtrio.tools.base import ToolContext
from rawtrio.tools.settings import ToolSettings

#: Small real-time settings: tests run real processes.
FAST = ToolSettings(output_cap=4000, sigterm_grace_s=0.2, bash_timeout_s=30.0)

MakeCtx = Callable[..., ToolContext]


@pytest.fixture
def make_ctx(tmp_path: Path) -> MakeCtx:
    def make(**overrides: Any) -> ToolContext:
        kwargs: dict[str, Any] = {
            "session_id": "sess-test",
            "call_id": "call-1",
            "cwd": tmp_path,
            "settings": FAST,
        }
        kwargs.update(overrides)
        return ToolContext(**kwargs)

    return make


async def until(condition: Callable[[], bool], poll_s: float = 0.01) -> None:
    """Wait (polling) until `condition()` holds; callers bound it with `trio.fail_after`."""
    while True:
        if condition():
            return
        await trio.sleep(poll_s)
