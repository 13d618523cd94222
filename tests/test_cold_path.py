"""The cold path's import discipline (docs/benchmarks.md: rawtrio's own work before the
provider SDK import). No timing here — the figures are in `stress/bench/bench_startup.py`;
these check what is loaded: the headless entry path imports no provider SDK, no HTTP
client, no MCP and nothing a run only needs later, and a run without config files builds
no pydantic validator (the files, when present, are still validated)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rawtrio.config.errors import ConfigFileError
from rawtrio.config.loader import load_config
from rawtrio.config.schema import (
    AgentConfig,
    CompactionConfig,
    HostConfig,
    RawtrioConfig,
    ValueRef,
    default_agent,
    default_config,
    env_ref,
)

#: Loaded with the SDK (or on first use), never by the entry path: the SDKs themselves,
#: their HTTP client (rawtrio's stream helpers and retry rules use it only after a
#: request), MCP, JSON Schema validation (tool arguments), .gitignore matching (tools that
#: walk a tree), the store's fork, export and search, and the terminal chat's toolkit.
NOT_ON_THE_ENTRY_PATH = (
    "anthropic",
    "openai",
    "httpx2",
    "mcp",
    "jsonschema",
    "pathspec",
    "urwid",
    "rawtrio.providers._stream",
    "rawtrio.providers.anthropic",
    "rawtrio.store.export",
    "rawtrio.store.fork",
    "rawtrio.store.search",
)


def run_python(code: str, tmp_path: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAWTRIO_", "XDG_"))}
    env.update(
        HOME=str(tmp_path),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        RAWTRIO_STATE_DIR=str(tmp_path / "state"),
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    return done.stdout.strip()


def test_the_headless_entry_path_imports_no_sdk_and_nothing_it_uses_later(
    tmp_path: Path,
) -> None:
    code = (
        "import sys, json\n"
        "import rawtrio.cli.entry, rawtrio.cli.main, rawtrio.cli.headless, rawtrio.app\n"
        f"print(json.dumps([m for m in {NOT_ON_THE_ENTRY_PATH!r} if m in sys.modules]))\n"
    )
    assert json.loads(run_python(code, tmp_path)) == []


def test_a_session_resolved_without_config_files_builds_no_validator(tmp_path: Path) -> None:
    """The whole resolution a headless run makes, in a folder and home without config
    files: no config model has a validator built afterwards."""
    code = (
        "import json, os\n"
        "from pathlib import Path\n"
        "from rawtrio.config import resolve_session_config, CliOverrides\n"
        "from rawtrio.config import schema\n"
        "agent = resolve_session_config(CliOverrides(headless=True), Path.cwd(), os.environ)\n"
        "models = [c for c in vars(schema).values()\n"
        "          if isinstance(c, type) and issubclass(c, schema._Strict)]\n"
        "print(json.dumps({'models': len(models),\n"
        "  'built': [c.__name__ for c in models if c.__pydantic_complete__]}))\n"
    )
    found = json.loads(run_python(code, tmp_path))
    assert found["models"] > 10
    assert found["built"] == []


def test_the_defaults_equal_what_validation_gives() -> None:
    assert default_config() == RawtrioConfig.model_validate({})
    assert default_config().model_dump() == RawtrioConfig.model_validate({}).model_dump()
    assert default_agent() == AgentConfig()
    assert default_agent().model_dump() == AgentConfig().model_dump()
    assert default_agent().compaction == CompactionConfig()
    assert default_config().host == HostConfig()
    assert env_ref("ANTHROPIC_API_KEY") == ValueRef(env="ANTHROPIC_API_KEY")


def test_loading_no_files_gives_the_defaults() -> None:
    loaded = load_config(None, None)
    assert loaded.config == RawtrioConfig.model_validate({})
    assert loaded.agent("default") == AgentConfig()
    assert loaded.layers == ()


def test_a_config_file_is_still_validated(tmp_path: Path) -> None:
    user = tmp_path / "config.toml"
    user.write_text('default_agent = "x"\nsigterm_grace_s = "soon"\n')
    with pytest.raises(ConfigFileError, match="sigterm_grace_s"):
        load_config(user, None)


def test_setting_up_logging_imports_no_redaction_nor_message_types(tmp_path: Path) -> None:
    """`rawtrio.cli.main` sets up logging before the chat's first frame: that must not
    load the redaction module and the message types it needs."""
    code = (
        "import sys, json\n"
        "from rawtrio.logs import log_to_stream\n"
        "log_to_stream(sys.stderr)\n"
        "import rawtrio.tui.app, rawtrio.tui.runner\n"
        "print(json.dumps([m for m in ('rawtrio.redaction', 'rawtrio.messages')"
        " if m in sys.modules]))\n"
    )
    assert json.loads(run_python(code, tmp_path)) == []


def test_the_process_log_handler_redacts_what_sessions_watch(tmp_path: Path) -> None:
    """The handler set up before the redaction module was loaded still passes every
    record through `LOG_FILTER` once it is: a watched secret never reaches the log."""
    code = (
        "import io, logging\n"
        "from rawtrio.logs import log_to_stream\n"
        "out = io.StringIO()\n"
        "log_to_stream(out)\n"
        "logging.getLogger('t').warning('before %s', 'hunter2-secret')\n"
        "from rawtrio.redaction import LOG_FILTER, Redactor\n"
        "red = Redactor()\n"
        "red.add('token', 'hunter2-secret')\n"
        "LOG_FILTER.watch(red)\n"
        "logging.getLogger('t').warning('after %s', 'hunter2-secret')\n"
        "print(out.getvalue())\n"
    )
    lines = run_python(code, tmp_path).splitlines()
    assert lines[0].endswith("before hunter2-secret")  # nothing watched yet
    assert lines[1].endswith("after [redacted:token]")
