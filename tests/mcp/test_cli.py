"""`rawtrio mcp list|test|import`, run in-process against real config files."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

from rawtrio.cli.main import run
from rawtrio.config.schema import RawtrioConfig
from tests.mcp.conftest import SERVER

CLAUDE = {
    "mcpServers": {
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "MODE": "fast"},
        },
        "docs": {
            "type": "http",
            "url": "https://example.com/mcp",
            "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"},
        },
        "old": {"type": "sse", "url": "https://example.com/sse"},
        "my server": {"command": "srv"},
    }
}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAWTRIO_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("RAWTRIO_CACHE_DIR", raising=False)
    config = tmp_path / "config.toml"
    monkeypatch.setenv("RAWTRIO_CONFIG", str(config))
    return config


def test_import_prints_toml_tables_and_warns_about_what_it_cannot_keep(
    tmp_path: Path, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "claude_desktop_config.json"
    source.write_text(json.dumps(CLAUDE))
    assert run(["mcp", "import", str(source)]) == 0
    out, err = capsys.readouterr()
    parsed = tomllib.loads(out)
    RawtrioConfig.model_validate(parsed)
    servers = parsed["mcp_servers"]
    assert servers["github"] == {
        "command": ["npx", "-y", "@modelcontextprotocol/server-github"],
        "env": {"GITHUB_TOKEN": {"env": "GITHUB_TOKEN"}, "MODE": "fast"},
    }
    assert servers["docs"] == {
        "url": "https://example.com/mcp",
        "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"},
    }
    assert set(servers) == {"github", "docs", "my_server"}
    assert "transport 'sse' is not supported" in err
    assert "Authorization: kept literally" in err
    assert "renamed to 'my_server'" in err
    assert not env.exists()  # printing writes nothing


def test_import_write_appends_to_the_config_and_refuses_duplicates(
    tmp_path: Path, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env.write_text('default_agent = "default"\n')
    source = tmp_path / ".mcp.json"
    source.write_text(json.dumps({"mcpServers": {"github": CLAUDE["mcpServers"]["github"]}}))
    assert run(["mcp", "import", str(source), "--write"]) == 0
    written = env.read_text()
    assert written.startswith('default_agent = "default"\n')
    assert tomllib.loads(written)["mcp_servers"]["github"]["command"][0] == "npx"
    assert run(["mcp", "import", str(source), "--write"]) == 2
    assert "already defines mcp_servers github" in capsys.readouterr().err
    assert env.read_text() == written


def test_import_rejects_a_file_without_servers(
    tmp_path: Path, env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "x.json"
    source.write_text('{"something": 1}')
    assert run(["mcp", "import", str(source)]) == 2
    assert "no mcpServers found" in capsys.readouterr().err


def test_list_and_test_show_servers_state_and_tools(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    command = json.dumps([sys.executable, str(SERVER)])
    env.write_text(
        f"[mcp_servers.t]\ncommand = {command}\ntools = ['*', '!flood']\n"
        f"[agents.default]\nmcp_servers = ['t']\n"
    )
    assert run(["mcp", "list"]) == 0
    out = capsys.readouterr().out
    assert "* t  (stdio: " in out
    assert "selected by: default" in out
    assert "never started" in out
    assert run(["mcp", "test", "t"]) == 0
    out = capsys.readouterr().out
    assert "MCP server 't' (rawtrio-test" in out
    assert "mcp/t/echo [read-only]  Return the text as it was given." in out
    assert "mcp/t/wipe [destructive]" in out
    assert "mcp/t/flood [not selected]" in out
    assert run(["mcp", "list"]) == 0
    out = capsys.readouterr().out
    assert "state: tools listed" in out
    assert "11 of 12 selected" in out
    assert "mcp/t/echo (read-only)" in out
    assert run(["mcp", "test", "nope"]) == 2
    assert "no MCP server 'nope' (known: t)" in capsys.readouterr().err


async def test_the_agents_servers_reach_the_session_options(
    tmp_path: Path, env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    import trio

    from rawtrio.app.options import prepare_session

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-value")
    await trio.Path(env).write_text(
        "[mcp_servers.a]\ncommand = ['a-server']\nstart = 'session'\n"
        "[mcp_servers.b]\nurl = 'http://127.0.0.1:9/mcp'\n"
        "[agents.default]\nmcp_servers = ['b']\ntools = ['*', '!mcp/b/x']\n"
    )
    ns = argparse.Namespace(prompt="x", cwd=str(tmp_path))
    options = (await prepare_session(ns, headless=True)).options
    assert list(options.mcp_servers) == ["b"]
    assert options.mcp_servers["b"].url == "http://127.0.0.1:9/mcp"
    assert options.mcp_tool_patterns == ("*", "!mcp/b/x")
    assert options.mcp_cache_dir == tmp_path / "state" / "cache" / "mcp-tools"
    assert options.variables is not None
