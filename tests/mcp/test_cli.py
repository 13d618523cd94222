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
    assert "Authorization" not in err  # "Bearer ${DOCS_TOKEN}" expands when it starts
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
    assert run(["mcp", "list", "--cached"]) == 0
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


FIXTURES = Path(__file__).with_name("fixtures")


def test_mcp_list_asks_a_server_never_listed_before(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: `mcp list` showed "never started" until `mcp test` had run."""
    command = json.dumps([sys.executable, str(SERVER)])
    hang = json.dumps([sys.executable, str(SERVER), "--mode=hang-at-start"])
    env.write_text(
        f"[mcp_servers.t]\ncommand = {command}\n"
        f"[mcp_servers.stuck]\ncommand = {hang}\nstartup_timeout_s = 1\n"
        f"[agents.default]\nmcp_servers = ['t']\n"
    )
    assert run(["mcp", "list", "--timeout", "60"]) == 0
    out = capsys.readouterr().out
    assert "state: tools listed" in out
    assert "12 of 12 selected" in out
    assert "mcp/t/echo (read-only)" in out
    assert "never started" not in out
    assert "state: FAILED: did not answer initialize within 1 s (startup_timeout_s)" in out


def test_mcp_list_waits_for_a_server_at_most_its_timeout(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hang = json.dumps([sys.executable, str(SERVER), "--mode=hang-at-start"])
    env.write_text(f"[mcp_servers.stuck]\ncommand = {hang}\n")
    assert run(["mcp", "list", "--timeout", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "state: FAILED: did not list its tools within 0.5 s (--timeout)" in out


def test_import_reads_a_project_mcp_json_keeping_dollar_brace_for_start(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["mcp", "import", str(FIXTURES / "mcp.json")]) == 0
    out, err = capsys.readouterr()
    servers = tomllib.loads(out)["mcp_servers"]
    assert servers == {
        "api-server": {
            "url": "${API_BASE_URL:-https://api.example.com}/mcp",
            "headers": {"Authorization": "Bearer ${API_KEY}"},
        },
        "db": {
            "command": ["${HOME}/bin/db-mcp", "--config", "${DB_CONFIG:-./db.json}"],
            "env": {"DB_URL": {"env": "DB_URL"}},
        },
    }
    assert "events: transport 'sse' is not supported" in err


def test_import_reads_claude_desktop_and_claude_json(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["mcp", "import", str(FIXTURES / "claude_desktop_config.json")]) == 0
    desktop = tomllib.loads(capsys.readouterr().out)["mcp_servers"]
    assert desktop["github"]["env"] == {"GITHUB_PERSONAL_ACCESS_TOKEN": {"env": "GITHUB_TOKEN"}}
    assert desktop["filesystem"]["command"][:3] == [
        "npx",
        "-y",
        "@modelcontextprotocol/server-filesystem",
    ]
    assert run(["mcp", "import", str(FIXTURES / "claude.json")]) == 0
    user = tomllib.loads(capsys.readouterr().out)["mcp_servers"]
    assert user == {
        "sentry": {"url": "https://mcp.sentry.dev/mcp"},
        "playwright": {"command": ["npx", "@playwright/mcp@latest"]},
    }


def test_import_reads_codex_config_toml(env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["mcp", "import", str(FIXTURES / "codex-config.toml")]) == 0
    out, err = capsys.readouterr()
    servers = tomllib.loads(out)["mcp_servers"]
    assert servers == {
        "docs": {
            "command": ["npx", "-y", "mcp-server-docs"],
            "env": {"DOCS_MODE": "fast"},
            "startup_timeout_s": 20.0,
            "call_timeout_s": 120.0,
            "tools": ["search", "fetch"],
        },
        "figma": {
            "url": "https://mcp.figma.com/mcp",
            "headers": {
                "X-Figma-Region": "us-east-1",
                "Authorization": "Bearer ${FIGMA_OAUTH_TOKEN}",
            },
        },
    }
    assert "mcp_servers.old: enabled = false; skipped" in err


def test_import_write_select_makes_the_servers_usable_in_one_step(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env.write_text("[agents.default]\nmcp_servers = []\nmax_steps = 7\n\n[models]\n")
    source = FIXTURES / "codex-config.toml"
    assert run(["mcp", "import", str(source), "--write", "--select", "default"]) == 0
    config = RawtrioConfig.model_validate(tomllib.loads(env.read_text()))
    assert config.agents["default"].mcp_servers == ["docs", "figma"]
    assert config.agents["default"].max_steps == 7
    assert "selected for agent 'default'" in capsys.readouterr().out
    # A new agent gets a table of its own.
    assert run(["mcp", "import", str(FIXTURES / "claude.json"), "--write", "--select", "web"]) == 0
    config = RawtrioConfig.model_validate(tomllib.loads(env.read_text()))
    assert config.agents["web"].mcp_servers == ["sentry", "playwright"]
    assert run(["mcp", "import", str(source), "--select", "x"]) == 2
    assert "--select needs --write" in capsys.readouterr().err
