"""From config file, flags and environment to a session's options (prepare_session)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from rawtrio.app.options import prepare_session
from rawtrio.errors import ConfigError, NoCredentials
from rawtrio.hooks import HookEvent
from rawtrio.permissions.rules import Effect, PermissionMode

CONFIG = """
default_agent = "coder"

[models.local]
provider = "openai-chat"
model_id = "local-model"
base_url = "http://127.0.0.1:9/v1"
api_key = { env = "LOCAL_KEY" }
max_output_tokens = 1000

[agents.coder]
model = "local"
system_prompt = "You are the coder."
tools = ["*", "!write_file"]
permission_mode = "accept-edits"
max_steps = 7
confine_paths = true
permissions = [{ match = "bash", effect = "deny", when = { path = "command", regex = "rm -rf" } }]
hooks = [{ event = "PreToolUse", match = "bash", command = "echo checked", shell = true }]
"""

SKILL = """---
name: release
description: How to cut a release
---
Tag it, then push.
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("RAWTRIO_AGENT", "RAWTRIO_MODEL", "RAWTRIO_PROVIDER", "RAWTRIO_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("RAWTRIO_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("LOCAL_KEY", "local-secret-value")
    return tmp_path


def args(**values: object) -> argparse.Namespace:
    base: dict[str, object] = {
        "config": None,
        "agent": None,
        "model": None,
        "provider": None,
        "base_url": None,
        "max_steps": None,
        "permission_mode": None,
        "sigterm_grace": None,
        "trust": False,
        "yes": False,
        "cwd": None,
        "prompt": "x",
    }
    base.update(values)
    return argparse.Namespace(**base)


async def test_config_becomes_session_options(home: Path) -> None:
    project = home / "project"
    (project / ".rawtrio" / "skills" / "release").mkdir(parents=True)
    (project / ".rawtrio" / "skills" / "release" / "SKILL.md").write_text(SKILL)
    (project / "AGENTS.md").write_text("Run make test before you finish.")
    config = home / "rawtrio.toml"
    config.write_text(CONFIG)
    setup = await prepare_session(args(config=str(config), cwd=str(project)), headless=True)
    o = setup.options
    assert setup.agent == "coder"
    assert o.provider.kind == "openai-chat"
    assert o.provider.model == "local-model"
    assert o.provider.api_key == "local-secret-value"
    assert o.max_steps == 7
    assert o.max_output_tokens == 1000
    assert o.tools.confine is True
    assert o.tools.redactor.redact("key local-secret-value") == "key [redacted:api_key]"
    assert o.permission_mode is PermissionMode.ACCEPT_EDITS
    assert [r.effect for r in o.permission_rules] == [Effect.DENY]
    assert o.headless is True
    assert o.tool_selection is not None
    assert "write_file" not in o.tool_selection
    assert {"bash", "read_file", "load_skill"} <= set(o.tool_selection)
    assert [h.event for h in o.hooks] == [HookEvent.PRE_TOOL_USE]
    assert o.system_prompt is not None
    assert "You are the coder." in o.system_prompt
    assert "Run make test" in o.system_prompt
    assert "release" in o.system_prompt
    assert [s.name for s in o.skills] == ["release"]


async def test_flags_override_and_bad_config_names_the_key(home: Path) -> None:
    config = home / "rawtrio.toml"
    config.write_text(CONFIG.replace("max_steps = 7", "max_steps = -1"))
    with pytest.raises(ConfigError, match=r"agents\.coder\.max_steps"):
        await prepare_session(args(config=str(config), cwd=str(home)), headless=True)
    config.write_text(CONFIG)
    setup = await prepare_session(
        args(config=str(config), cwd=str(home), max_steps=3, permission_mode="plan"),
        headless=False,
    )
    assert setup.options.max_steps == 3
    assert setup.options.permission_mode is PermissionMode.PLAN


async def test_missing_key_is_no_credentials(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCAL_KEY")
    config = home / "rawtrio.toml"
    config.write_text(CONFIG)
    with pytest.raises(NoCredentials, match="LOCAL_KEY"):
        await prepare_session(args(config=str(config), cwd=str(home)), headless=True)


async def test_a_session_can_switch_to_any_configured_model(home: Path) -> None:
    config = home / "rawtrio.toml"
    config.write_text(
        CONFIG
        + """
[models.big]
provider = "anthropic"
model_id = "big-model"
api_key = { env = "BIG_KEY" }
max_output_tokens = 4000
"""
    )
    setup = await prepare_session(args(config=str(config), cwd=str(home)), headless=True)
    o = setup.options
    assert (o.model_name, o.model_names) == ("local", ("local", "big"))
    assert o.options_for_model is not None
    with pytest.raises(NoCredentials):  # BIG_KEY is unset: the session keeps its model
        await o.options_for_model("big")
    os.environ["BIG_KEY"] = "big-secret-key"
    try:
        big = await o.options_for_model("big")
    finally:
        del os.environ["BIG_KEY"]
    assert (big.provider.kind, big.provider.model, big.provider.api_key) == (
        "anthropic",
        "big-model",
        "big-secret-key",
    )
    assert big.max_output_tokens == 4000
    assert big.model_name == "big"
    assert big.tools.redactor.redact("big-secret-key") == "[redacted:api_key]"
    with pytest.raises(ConfigError, match="a configured model"):
        await o.options_for_model("nope")
