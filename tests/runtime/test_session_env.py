"""A session's processes start from the session's environment (`SessionOptions.env`, an
attached client's on a host), not this process's, with the secrets stripped as always."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

import pytest
import trio

from rawtrio.app.options import prepare_session
from rawtrio.config.schema import ValueRef
from rawtrio.contracts import ToolStatus, TurnOutcome
from rawtrio.hooks import HookEvent, HookSpec
from rawtrio.messages import ToolResult, UserMessage
from tests.conftest import session_on
from tests.mcp.conftest import stdio_server

MARK = "RAWTRIO_TEST_MARK"
#: Values a leaked secret would show (long enough that nothing would redact them).
SECRETS = {"ANTHROPIC_API_KEY": "sk-ant-client-secret", "CLIENT_API_KEY": "client-key-secret"}
SHOW = f'echo "mark=${MARK} anthropic=${{ANTHROPIC_API_KEY:-gone}} other=${{CLIENT_API_KEY:-gone}}"'
SEEN = "mark=client anthropic=gone other=gone"


@pytest.fixture
def client_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A client's environment that differs from this process's: the mark is `client`
    there and `host` here; the client's keys are not in this process's environment."""
    monkeypatch.setenv(MARK, "host")
    for name in SECRETS:
        monkeypatch.delenv(name, raising=False)
    return {**os.environ, MARK: "client", **SECRETS}


def calls(*tool_calls: dict[str, object]) -> dict[str, object]:
    replies = [{"tool_calls": list(tool_calls)}, {"text": "ok"}]
    return {"rules": [{"match": "*", "replies": replies}]}


def results(context: Sequence[object]) -> list[ToolResult]:
    return [m for m in context if isinstance(m, ToolResult)]


async def test_bash_and_background_jobs_see_the_session_env_minus_secrets(
    tmp_path: Path, client_env: dict[str, str]
) -> None:
    written = tmp_path / "background.txt"
    scenario = calls(
        {"name": "bash", "arguments": {"command": SHOW}},
        {"name": "bash", "arguments": {"command": f"{SHOW} > {written}", "background": True}},
    )
    async with session_on(scenario, "anthropic", tmp_path, env=client_env) as (session, _, _):
        ended = await session.run_turn("show the environment")
        assert ended.outcome is TurnOutcome.COMPLETED
        foreground, background = results(session.context)
        assert foreground.status is ToolStatus.OK
        assert foreground.content.startswith(f"{SEEN}\n")
        assert background.status is ToolStatus.OK
        while not written.exists() or not written.read_text():  # noqa: ASYNC110
            await trio.sleep(0.02)  # the job's file: no event says it is written
        assert written.read_text() == f"{SEEN}\n"


async def test_without_a_session_env_processes_take_this_process_env(
    tmp_path: Path, client_env: dict[str, str]
) -> None:
    scenario = calls({"name": "bash", "arguments": {"command": SHOW}})
    async with session_on(scenario, "anthropic", tmp_path) as (session, _, _):
        await session.run_turn("show the environment")
        (shown,) = results(session.context)
        assert shown.content.startswith("mark=host anthropic=gone other=gone\n")


async def test_hooks_see_the_session_env_minus_secrets(
    tmp_path: Path, client_env: dict[str, str]
) -> None:
    hooks = (HookSpec(HookEvent.USER_PROMPT_SUBMIT, SHOW, shell=True),)
    scenario = {"rules": [{"match": "*", "replies": [{"text": "ok"}]}]}
    async with session_on(scenario, "anthropic", tmp_path, hooks=hooks, env=client_env) as (
        session,
        _,
        _,
    ):
        ended = await session.run_turn("hello")
        assert ended.outcome is TurnOutcome.COMPLETED
        first = session.context[0]
        assert isinstance(first, UserMessage)
        assert SEEN in first.text


async def test_mcp_stdio_servers_start_from_the_session_env(
    tmp_path: Path, client_env: dict[str, str]
) -> None:
    # `{env = "NAME"}` in the server's env is read from the session's environment too.
    config = stdio_server(env={"FROM_REF": ValueRef(env=MARK)})
    environ: list[dict[str, object]] = [
        {"name": "mcp__t__environ", "arguments": {"name": name}}
        for name in (MARK, "FROM_REF", *SECRETS)
    ]
    scenario = calls(*environ)
    async with session_on(
        scenario, "anthropic", tmp_path, mcp_servers={"t": config}, env=client_env
    ) as (session, _, _):
        ended = await session.run_turn("show the environment")
        assert ended.outcome is TurnOutcome.COMPLETED
        found = [(r.status, r.content) for r in results(session.context)]
        assert found == [
            (ToolStatus.OK, "client"),
            (ToolStatus.OK, "client"),
            (ToolStatus.OK, "<unset>"),
            (ToolStatus.OK, "<unset>"),
        ]


async def test_prepare_session_sets_the_env_it_was_given(
    tmp_path: Path, client_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in (("XDG_CONFIG_HOME", "config"), ("RAWTRIO_STATE_DIR", "state")):
        monkeypatch.setenv(name, str(tmp_path / value))
        client_env[name] = str(tmp_path / value)
    for name in ("RAWTRIO_AGENT", "RAWTRIO_MODEL", "RAWTRIO_PROVIDER", "RAWTRIO_CONFIG"):
        monkeypatch.delenv(name, raising=False)
        client_env.pop(name, None)
    unset = ("config", "agent", "model", "provider", "base_url", "max_steps")
    flags: dict[str, object] = dict.fromkeys((*unset, "permission_mode", "sigterm_grace"))
    flags |= {"trust": False, "yes": False, "cwd": str(tmp_path), "prompt": "x"}
    given = await prepare_session(argparse.Namespace(**flags), headless=True, env=client_env)
    assert given.options.env is client_env
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-host-key")
    local = await prepare_session(argparse.Namespace(**flags), headless=True)
    assert local.options.env is None
