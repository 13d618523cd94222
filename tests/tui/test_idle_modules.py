"""What an idle chat keeps loaded after a turn (docs/benchmarks.md, "idle RSS").

The chat's idle RSS is almost all imported code: the `anthropic` SDK, pydantic, trio and
urwid are ~92 MB of it before any rawtrio module. What rawtrio decides is what else gets
imported, so this keeps out what a local chat talking to one provider never uses.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from tests.headless.conftest import FakeModel
from tests.headless.support import Isolation, wait_until
from tests.tui.support import Pane

#: Imported by a sitecustomize (through PYTHONPATH): on SIGUSR1 the chat writes the names
#: of its loaded modules to the file `RAWTRIO_TEST_MODULES` names (written whole, then
#: renamed, so a reader never sees half of it).
MODULES_ON_SIGUSR1 = """\
import json, os, signal, sys
def _write_modules(signum, frame):
    path = os.environ["RAWTRIO_TEST_MODULES"]
    with open(path + ".tmp", "w") as f:
        json.dump(sorted(sys.modules), f)
    os.replace(path + ".tmp", path)
signal.signal(signal.SIGUSR1, _write_modules)
"""

#: Never loaded by a local chat (Anthropic, no config files, no MCP servers) idle after a
#: turn: the other provider's SDK and the MCP SDK (each several MB), the pydantic config
#: schema (nothing to validate), the dashboard's web stack, the editor protocol, and the
#: client of a host the chat is not attached to. Then what a turn that changed no file
#: never needs: `difflib` (an edit's preview, a diff shown), the checkpoints' undo and
#: redo, `tomllib` (a project config file to parse), and `platformdirs` (rawtrio's own
#: folders are computed where the answer is plain: `rawtrio.user_dirs`).
NOT_IN_AN_IDLE_CHAT = (
    "openai",
    "mcp",
    "rawtrio.config.schema",
    "rawtrio.dashboard",
    "starlette",
    "hypercorn",
    "rawtrio.acp",
    "rawtrio.host.remote",
    "difflib",
    "rawtrio.checkpoints.restore",
    "tomllib",
    "platformdirs",
)


def test_an_idle_chat_after_a_turn_has_not_loaded_what_it_does_not_use(
    iso: Isolation, chat_model: FakeModel, tmp_path: Path
) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(MODULES_ON_SIGUSR1)
    written = tmp_path / "modules.json"
    env = {
        "ANTHROPIC_API_KEY": "test-key",
        "PYTHONPATH": os.pathsep.join([str(hook), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "RAWTRIO_TEST_MODULES": str(written),
    }
    pane = Pane.start(
        iso, "--no-attach", "--base-url", chat_model.base_url, "--model", "test-model", env=env
    )
    try:
        pane.wait_for("ready │", "the session is open")
        pane.type("say hello")
        pane.keys("Enter")
        pane.wait_for("return 42", "the end of the reply")
        pane.wait_for("ready │", "idle after the turn")
        pane.chat_process().send_signal(signal.SIGUSR1)
        wait_until(written.exists, "the chat writes its modules")
        modules = set(json.loads(written.read_text()))
        assert "anthropic" in modules  # the hook ran in the chat that took the turn
        loaded = sorted(
            m for m in modules if any(m == n or m.startswith(n + ".") for n in NOT_IN_AN_IDLE_CHAT)
        )
        assert loaded == []
        pane.keys("C-d")
        assert pane.wait_ended() == 0
    finally:
        pane.close()
