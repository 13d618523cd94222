"""The cold path's import discipline (docs/benchmarks.md: rawtrio's own work before the
provider SDK import). No timing here — the figures are in `stress/bench/bench_startup.py`;
these check what is loaded: the headless entry path imports no provider SDK, no HTTP
client, no MCP and nothing a run only needs later, and a run without config files builds
no pydantic validator (the files, when present, are still validated)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import platformdirs
import pytest

from rawtrio.cli.flags import HelpFormatter
from rawtrio.cli.main import build_parser
from rawtrio.config.defaults import BuiltinAgent, BuiltinCompaction, BuiltinConfig, EnvRef
from rawtrio.config.errors import ConfigFileError
from rawtrio.config.loader import load_config
from rawtrio.config.schema import AgentConfig, CompactionConfig, RawtrioConfig, ValueRef
from rawtrio.config.user_path import user_config_dir

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


#: Imported by a sitecustomize (through PYTHONPATH) before `rawtrio -p` runs: at the first
#: lookup of a provider SDK it writes what is loaded and which config models were built,
#: and ends the process there (the moment `bench_startup.py` stops its clock).
SDK_STOP = """\
import json, os, sys
class _SdkStop:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name not in ("anthropic", "openai"):
            return None
        schema = sys.modules.get("rawtrio.config.schema")
        models = [c for c in vars(schema).values()
                  if isinstance(c, type) and issubclass(c, schema._Strict)] if schema else []
        with open(os.environ["RAWTRIO_TEST_SDK_STOP"], "w") as f:
            json.dump({"modules": sorted(sys.modules),
                       "built": [c.__name__ for c in models if c.__pydantic_complete__]}, f)
        os._exit(0)
sys.meta_path.insert(0, _SdkStop)
"""

#: Never loaded before the SDK by a local `rawtrio -p` without config files: the host's
#: socket client (`--no-attach` looks for no host), the TOML parser (no file to parse),
#: the "did you mean" of a config error, and pydantic with the config schema (nothing to
#: validate: the built-in values are plain dataclasses, `rawtrio.config.defaults`).
NOT_BEFORE_THE_SDK = (
    "rawtrio.host.client",
    "rawtrio.host.paths",
    "tomllib",
    "difflib",
    "pydantic",
    "pydantic_core",
    "rawtrio.config.schema",
)


def stopped_run(tmp_path: Path, hook: str, stop_variable: str, *argv: str) -> dict[str, Any]:
    """Run `rawtrio -p hi ARGV` in a folder and home without config files, with `hook` as
    its `sitecustomize` (which writes what it saw to the file named by `stop_variable` and
    ends the process); what the hook wrote."""
    folder = tmp_path / "hook"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(hook)
    stop = tmp_path / "stop.json"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("RAWTRIO_", "XDG_", "ANTHROPIC_", "OPENAI_"))
    }
    env.update(
        HOME=str(tmp_path),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_RUNTIME_DIR=str(tmp_path / "run"),
        RAWTRIO_STATE_DIR=str(tmp_path / "state"),
        RAWTRIO_PROVIDER="anthropic",
        RAWTRIO_MODEL="test-model",
        ANTHROPIC_API_KEY="test-key",
        ANTHROPIC_BASE_URL="http://127.0.0.1:9",  # never reached: the run stops before
        PYTHONPATH=os.pathsep.join([str(folder), *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    env[stop_variable] = str(stop)
    subprocess.run(
        [sys.executable, "-m", "rawtrio", "-p", "hi", *argv],
        capture_output=True,
        check=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    found: dict[str, Any] = json.loads(stop.read_text())
    return found


def until_the_sdk_import(tmp_path: Path, *argv: str) -> dict[str, list[str]]:
    """Run `rawtrio -p hi ARGV` up to the provider SDK's import; what was loaded and built
    by then."""
    return stopped_run(tmp_path, SDK_STOP, "RAWTRIO_TEST_SDK_STOP", *argv)


def test_a_local_headless_run_builds_no_config_model_before_the_sdk(tmp_path: Path) -> None:
    """The whole way of `rawtrio -p` to the provider SDK's import, in a real process: no
    config model is even imported (pydantic neither), and nothing of `NOT_BEFORE_THE_SDK`
    is loaded."""
    found = until_the_sdk_import(tmp_path, "--no-attach")
    assert found["built"] == []
    assert "rawtrio.config.defaults" in found["modules"]  # the defaults were read
    loaded = [m for m in NOT_BEFORE_THE_SDK + NOT_ON_THE_ENTRY_PATH if m in found["modules"]]
    assert loaded == []


#: Imported by a sitecustomize (through PYTHONPATH) before `rawtrio -p` runs: at the
#: first TCP connection (the audit event `socket.connect`, raised before the connection is
#: tried: the provider SDK sending the first request) it writes what is loaded and ends
#: the process there (the moment `bench_startup.py` stops its first-request clock).
REQUEST_STOP = """\
import json, os, socket, sys
def _stop(event, args):
    if event != "socket.connect" or args[0].family not in (socket.AF_INET, socket.AF_INET6):
        return
    with open(os.environ["RAWTRIO_TEST_REQUEST_STOP"], "w") as f:
        json.dump({"modules": sorted(sys.modules)}, f)
    os._exit(0)
sys.addaudithook(_stop)
"""

#: Needed only once the model answers, so never loaded before the first request of a
#: local `rawtrio -p` whose prompt calls no tool: the checkpoint machinery (built when a
#: tool call that may write starts, or at the turn's end: `Session.checkpoints`), MCP
#: (no server configured), the config schema (no config file) and tree walking beyond
#: what the tools' definitions need, and what a compaction keeps and how it summarizes
#: (`rawtrio.context.compaction`: only when one runs; whether one is due is
#: `rawtrio.context.compaction_state`), `platformdirs` (rawtrio's folders are found
#: without it where the XDG variables or `$HOME` say: `rawtrio.user_dirs`) and the
#: `[host]` settings (`--no-attach` reads none).
NOT_BEFORE_THE_FIRST_REQUEST = (
    "rawtrio.checkpoints.capture",
    "rawtrio.checkpoints.diff",
    "rawtrio.checkpoints.model",
    "rawtrio.checkpoints.objects",
    "rawtrio.checkpoints.restore",
    "rawtrio.checkpoints.store",
    "rawtrio.checkpoints.tree",
    "rawtrio.mcp.connection",
    "rawtrio.mcp.manager",
    "rawtrio.config.schema",
    "rawtrio.context.compaction",
    "rawtrio.host.settings",
    "platformdirs",
    "mcp",
    "jsonschema",
    "pathspec",
)

#: Loaded on first use, each by what makes a `rawtrio -p` use it before its first request
#: (files written into its home, which is also its folder, and flags): running a hook and
#: reading its answer (a session's hook runner loads neither when no hook matches), a
#: SKILL.md's frontmatter parser (most folders have no skill), the reading of `@path`
#: imports in AGENTS.md (most folders have no AGENTS.md), the reading of Claude Code's
#: settings files (most homes and folders have none) and the mapping of their permission
#: patterns (a settings file's `permissions`, or `--allowedTools`), the reading of Claude
#: Code's `.mcp.json` and Claude Code's output shapes (`json`, `stream-json`). A plain
#: run uses none of them.
ONLY_WHEN_USED: dict[str, tuple[tuple[str, ...], dict[str, str], tuple[str, ...]]] = {
    "a hook": (
        ("rawtrio.hooks.execute", "rawtrio.hooks.decision", "rawtrio.hooks.process"),
        {
            "config/rawtrio/config.toml": "[agents.default]\n"
            'hooks = [{ event = "UserPromptSubmit", command = ["true"] }]\n'
        },
        (),
    ),
    "a skill": (
        ("rawtrio.skills.frontmatter",),
        {".rawtrio/skills/notes/SKILL.md": "---\nname: notes\ndescription: Notes.\n---\nBody\n"},
        (),
    ),
    "an AGENTS.md": (("rawtrio.config.memory_imports",), {"AGENTS.md": "Be brief.\n"}, ()),
    "Claude Code's settings": (
        ("rawtrio.config.claude_settings", "rawtrio.compat.claude_permissions"),
        {".claude/settings.json": '{"permissions": {"deny": ["Bash(rm:*)"]}}'},
        (),
    ),
    "--allowedTools": (("rawtrio.compat.claude_permissions",), {}, ("--allowedTools", "Read")),
    "a project's .mcp.json": (
        ("rawtrio.mcp.importer",),
        {".mcp.json": '{"mcpServers": {"x": {"command": "never-started"}}}'},  # not trusted
        (),
    ),
    "--output-format json": (("rawtrio.cli.claude_output",), {}, ("--output-format", "json")),
}
LAZY_MODULES = tuple(sorted({m for modules, _, _ in ONLY_WHEN_USED.values() for m in modules}))


def until_the_first_request(tmp_path: Path, *argv: str) -> list[str]:
    """Run `rawtrio -p hi ARGV` up to its first connection to the model's endpoint; the
    modules loaded by then."""
    modules: list[str] = stopped_run(tmp_path, REQUEST_STOP, "RAWTRIO_TEST_REQUEST_STOP", *argv)[
        "modules"
    ]
    return modules


def test_a_local_headless_run_loads_what_only_the_answer_needs_after_the_request(
    tmp_path: Path,
) -> None:
    """The whole way of `rawtrio -p` to its first HTTP request, in a real process: what
    only a tool call, a configured server or a config file needs is not loaded yet."""
    modules = until_the_first_request(tmp_path, "--no-attach")
    assert "anthropic" in modules  # it did get as far as the request
    assert [m for m in NOT_BEFORE_THE_FIRST_REQUEST + LAZY_MODULES if m in modules] == []


@pytest.mark.parametrize("case", list(ONLY_WHEN_USED))
def test_a_run_that_uses_a_lazy_module_loads_it_before_its_request(
    case: str, tmp_path: Path
) -> None:
    """Each module a plain run leaves out is loaded when the run needs it: with a hook, a
    skill, Claude Code's settings or output."""
    modules, files, argv = ONLY_WHEN_USED[case]
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    loaded = until_the_first_request(tmp_path, "--no-attach", *argv)
    assert "anthropic" in loaded
    assert [m for m in modules if m not in loaded] == []


def _fields(value: Any) -> dict[str, object]:
    """A model's or dataclass's field values, arrays as tuples (the built-in values are
    immutable tuples where the schema has lists)."""
    model_fields = getattr(type(value), "model_fields", None)
    names = list(model_fields or (f.name for f in dataclasses.fields(value)))
    out: dict[str, object] = {}
    for name in names:
        v = getattr(value, name)
        if isinstance(v, list):
            v = tuple(v)
        elif hasattr(type(v), "model_fields") or dataclasses.is_dataclass(v):
            v = _fields(v)
        out[name] = v
    return out


def test_the_builtin_values_equal_what_validation_gives() -> None:
    """Every field of the schema has its built-in twin, with the same default: the two
    cannot drift apart."""
    config = _fields(RawtrioConfig.model_validate({}))
    del config["host"]  # read by `rawtrio.host.settings`, never by a session
    assert _fields(BuiltinConfig()) == config
    assert _fields(BuiltinAgent()) == _fields(AgentConfig.model_validate({}))
    assert _fields(BuiltinCompaction()) == _fields(CompactionConfig.model_validate({}))
    assert _fields(EnvRef("ANTHROPIC_API_KEY")) == _fields(ValueRef(env="ANTHROPIC_API_KEY"))


def test_loading_no_files_gives_the_defaults() -> None:
    loaded = load_config(None, None)
    config = _fields(RawtrioConfig.model_validate({}))
    del config["host"]
    assert _fields(loaded.config) == config
    agent = loaded.agent("default")
    assert agent is not None
    assert _fields(agent) == _fields(AgentConfig.model_validate({}))
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


@pytest.mark.parametrize(
    "env",
    [
        {"XDG_CONFIG_HOME": "/srv/conf", "HOME": "/home/u"},
        {"XDG_CONFIG_HOME": "/srv/conf/", "HOME": "/home/u"},
        {"HOME": "/home/u"},
        {"HOME": "/home/u/"},
        {"HOME": "/"},
        {"XDG_CONFIG_HOME": "", "HOME": "/home/u"},
        {"XDG_CONFIG_HOME": "  ", "HOME": "/home/u"},
        {"XDG_CONFIG_HOME": "relative/conf", "HOME": "/home/u"},
        {"XDG_CONFIG_HOME": "/srv/conf", "HOME": "relative"},
        {"HOME": "relative"},
        {},
    ],
)
def test_the_user_config_folder_is_where_platformdirs_puts_it(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found without importing platformdirs in the usual cases, and always the same
    folder as `platformdirs.user_config_path` (which the other cases ask)."""
    for name in ("XDG_CONFIG_HOME", "HOME", "ANDROID_DATA", "ANDROID_ROOT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        expected: Path | type[RuntimeError] = platformdirs.user_config_path("rawtrio")
    except RuntimeError:  # no usable home: platformdirs says so, and so must we
        expected = RuntimeError
    if expected is RuntimeError:
        with pytest.raises(RuntimeError):
            user_config_dir()
    else:
        assert user_config_dir() == expected


@pytest.mark.parametrize("columns", [None, "50", "200", "0", "-3", "wide"])
def test_the_help_is_the_same_without_shutil(
    columns: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rawtrio --help` and a usage error read the same with `HelpFormatter`, which takes
    the width without importing shutil, as with argparse's own formatter."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    ours = build_parser()
    assert ours.formatter_class is HelpFormatter
    theirs = build_parser()
    theirs.formatter_class = argparse.HelpFormatter
    assert ours.format_help() == theirs.format_help()
    assert ours.format_usage() == theirs.format_usage()
