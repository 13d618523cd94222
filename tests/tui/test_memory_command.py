"""`/memory` in the chat lists the project memory files a session here starts with."""

from __future__ import annotations

from tests.headless.conftest import FakeModel
from tests.headless.support import Isolation
from tests.tui.support import Pane


def test_memory_lists_agents_md_claude_md_and_their_imports(
    iso: Isolation, chat_model: FakeModel
) -> None:
    iso.cwd.mkdir(parents=True)
    (iso.cwd / "AGENTS.md").write_text("agents\n")
    (iso.cwd / "CLAUDE.md").write_text("claude, see @notes.md\n")
    (iso.cwd / "notes.md").write_text("notes\n")
    args = ["--base-url", chat_model.base_url, "--sigterm-grace", "0.2"]
    pane = Pane.start(iso, *args, env={"ANTHROPIC_API_KEY": "test-key"})
    try:
        pane.wait_for("ready │")
        pane.type("/memory")
        pane.keys("Enter")
        screen = pane.wait_for("(imported by")
        assert f"project memory for {iso.cwd}" in screen
        assert str(iso.cwd / "AGENTS.md") in screen
        assert str(iso.cwd / "CLAUDE.md") in screen
        pane.type("/quit")
        pane.keys("Enter")
        assert pane.wait_ended() == 0
    finally:
        pane.close()
