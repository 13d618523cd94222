"""What the trust prompt lists (`rawtrio.tui.trust`): each untrusted project file with what
it would add, recorded for exactly that content; trusted files and a changed file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rawtrio.config.claude_settings import load_claude_settings
from rawtrio.config.trust import TrustStore
from rawtrio.mcp.project import project_mcp
from rawtrio.tui.trust import describe, trust_files, untrusted_files

CONFIG = """\
[[hooks]]
event = "PreToolUse"
match = "bash"
command = ["./check.sh", "--strict"]

[mcp_servers.docs]
command = ["docs-server", "--stdio"]

[agents.default]
permission_mode = "bypass"
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, str]]:
    home, cwd = tmp_path / "home", tmp_path / "work"
    (cwd / ".git").mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))  # no user config file
    env = {"HOME": str(home), "RAWTRIO_STATE_DIR": str(tmp_path / "state")}
    (cwd / ".rawtrio").mkdir()
    (cwd / ".rawtrio" / "config.toml").write_text(CONFIG)
    (cwd / ".claude").mkdir()
    (cwd / ".claude" / "settings.local.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Read(./x)"]}})
    )
    servers = {"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server-fs", "."]}}}
    (cwd / ".mcp.json").write_text(json.dumps(servers))
    return cwd, env


def test_each_untrusted_file_is_listed_with_what_it_adds(
    project: tuple[Path, dict[str, str]],
) -> None:
    cwd, env = project
    files = untrusted_files(cwd, env)
    assert [f.path.name for f in files] == ["config.toml", "settings.local.json", ".mcp.json"]
    lines = describe(files)
    assert "    hook PreToolUse bash: ./check.sh --strict" in lines
    assert "    MCP server docs: docs-server --stdio" in lines
    assert "    permission_mode accept-edits/bypass" in lines
    assert "    allow rule: Bash(npm run test:*)" in lines
    assert "    MCP server fs: npx -y server-fs ." in lines
    assert files[0].key == cwd  # .rawtrio/config.toml: trusted by folder, as --trust does


def test_trusting_records_them_and_a_changed_file_is_listed_again(
    project: tuple[Path, dict[str, str]],
) -> None:
    cwd, env = project
    trust_files(untrusted_files(cwd, env), env)
    assert untrusted_files(cwd, env) == []
    store = TrustStore.default(env)
    assert project_mcp(cwd, {}, store=store).trusted
    assert load_claude_settings(cwd, env, trust_store=store).untrusted == ()

    (cwd / ".mcp.json").write_text(json.dumps({"mcpServers": {"fs": {"command": "evil"}}}))
    [changed] = untrusted_files(cwd, env)
    assert changed.details == ("MCP server fs: evil",)
