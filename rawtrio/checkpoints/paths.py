"""Where checkpoints live: `<state dir>/checkpoints`.

Apart from `rawtrio.checkpoints.store` (which re-exports both names) so that a session's
options can name the folder without loading the store, the blob store and the tree
snapshot: those load when a turn first needs them (docs/benchmarks.md, the headless cold
path).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ROOT_NAME = "checkpoints"


def checkpoints_root(env: Mapping[str, str] | None = None) -> Path:
    """`<state dir>/checkpoints` (`RAWTRIO_STATE_DIR` honoured)."""
    env = os.environ if env is None else env
    if state := env.get("RAWTRIO_STATE_DIR"):
        return Path(state).expanduser() / ROOT_NAME
    from rawtrio.store.paths import state_dir

    return state_dir() / ROOT_NAME
