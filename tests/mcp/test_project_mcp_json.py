"""A project's `.mcp.json` (Claude Code's shape) is used once trusted, like `.rawtrio/`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from rawtrio.app.options import prepare_session
from rawtrio.cli.main import run
from tests.mcp.conftest import SERVER


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    monkeypatch.chdir(root / "src")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RAWTRIO_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("RAWTRIO_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-value")
    monkeypatch.delenv("RAWTRIO_CACHE_DIR", raising=False)
    (tmp_path / "config.toml").write_text("")
    return root


def mcp_json(repo: Path, servers: dict[str, object]) -> Path:
    path = repo / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}, indent=2))
    return path


TEST_SERVER = {"type": "stdio", "command": sys.executable, "args": [str(SERVER)]}


async def session_servers(repo: Path, *, trust: bool = False) -> tuple[list[str], tuple[str, ...]]:
    ns = argparse.Namespace(prompt="x", cwd=str(repo / "src"), trust=trust)
    setup = await prepare_session(ns, headless=True)
    return list(setup.options.mcp_servers), setup.notices


async def test_an_untrusted_mcp_json_is_not_used_and_says_how_to_trust_it(repo: Path) -> None:
    """Regression: a project's `.mcp.json` was never read."""
    file = mcp_json(repo, {"t": TEST_SERVER})
    servers, notices = await session_servers(repo)
    assert servers == []
    assert (
        f"{file} defines MCP servers t, which run programs; they are not used until you "
        "trust this file (answer the trust prompt, or pass --trust: rawtrio remembers it "
        "until the file changes)"
    ) in notices


async def test_trust_is_given_once_recorded_and_asked_again_when_the_file_changes(
    repo: Path,
) -> None:
    file = mcp_json(repo, {"t": TEST_SERVER})
    servers, _ = await session_servers(repo, trust=True)
    assert servers == ["t"]
    servers, notices = await session_servers(repo)  # remembered
    assert servers == ["t"]
    assert not any("not used until you trust" in n for n in notices)
    mcp_json(repo, {"t": TEST_SERVER, "u": {"command": "other-server"}})
    servers, notices = await session_servers(repo)
    assert servers == []
    assert any(n.startswith(f"{file} defines MCP servers t, u") for n in notices)


async def test_rawtrios_own_server_of_the_same_name_wins(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        "[mcp_servers.t]\ncommand = ['mine']\n[agents.default]\nmcp_servers = ['t']\n"
    )
    file = mcp_json(repo, {"t": TEST_SERVER, "extra": {"command": "x"}})
    ns = argparse.Namespace(prompt="x", cwd=str(repo / "src"), trust=True)
    setup = await prepare_session(ns, headless=True)
    assert setup.options.mcp_servers["t"].command == ["mine"]
    assert list(setup.options.mcp_servers) == ["t", "extra"]
    assert (
        f"{file}: server 't' is shadowed by [mcp_servers.t] of rawtrio's config; rawtrio's is used"
    ) in setup.notices


def test_mcp_list_and_config_check_show_the_project_servers_from_a_subfolder(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = mcp_json(repo, {"t": TEST_SERVER})
    assert run(["config", "check"]) == 0
    out, err = capsys.readouterr()
    assert f"project {file}: NOT trusted (pass --trust to use it); servers used: none" in out
    assert "not used until you trust" in err
    assert run(["mcp", "list", "--trust"]) == 0
    out = capsys.readouterr().out
    assert "* t  (stdio: " in out
    assert "selected by: every agent (.mcp.json)" in out
    assert "mcp/t/echo (read-only)" in out  # asked the real server
    assert run(["config", "check"]) == 0
    assert f"project {file}: trusted; servers used: t" in capsys.readouterr().out


def test_a_broken_mcp_json_is_a_clear_error(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / ".mcp.json").write_text("{not json")
    assert run(["config", "check"]) == 2
    err = capsys.readouterr().err
    assert f"{repo / '.mcp.json'}" in err
    assert "not valid JSON" in err


async def test_a_broken_mcp_json_never_stops_a_session_from_starting(repo: Path) -> None:
    """A cloned project's broken `.mcp.json` is said, and its servers left out; the session
    starts (only `config check` and `mcp list` refuse it, above)."""
    file = repo / ".mcp.json"
    file.write_text("{not json")
    servers, notices = await session_servers(repo)
    assert servers == []
    [notice] = [n for n in notices if str(file) in n]
    assert notice.startswith(f"{file}: its MCP servers are not used: expected Claude Code's")
    assert "not valid JSON" in notice
