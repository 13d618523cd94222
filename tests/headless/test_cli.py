"""The command line outside a turn: --version, usage errors, missing credentials."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from rawtrio import __version__
from tests.headless.conftest import FakeModel
from tests.headless.support import LIVENESS_S, Isolation, run_rawtrio

HEAVY = ("trio", "anthropic", "openai", "httpx2", "pydantic", "jsonschema", "mcp", "urwid")


def test_version_prints_the_version(iso: Isolation) -> None:
    done = run_rawtrio(iso, "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"rawtrio {__version__}"


def test_version_imports_nothing_heavy(iso: Isolation) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "rawtrio", "--version"],
        env=iso.env(),
        capture_output=True,
        text=True,
        timeout=LIVENESS_S,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    # `import time: self | cumulative | package.module` — one line per imported module.
    imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "rawtrio.cli.entry" in imported
    assert "rawtrio.cli.main" not in imported  # not even argparse: the entry module answers
    heavy = sorted(m for m in imported if m.split(".")[0] in HEAVY)
    assert heavy == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        (["-p", "hi", "--output-format", "xml"], "invalid choice: 'xml'"),
        (["-p", "hi", "--provider", "gemini"], "invalid choice: 'gemini'"),
        (["-p", "hi", "--max-steps", "many"], "invalid int value: 'many'"),
        (["-p", "hi", "--max-steps", "0"], "--max-steps: expected a positive integer, got 0"),
        (["-p", "hi", "--sigterm-grace", "-1"], "--sigterm-grace: expected seconds >= 0"),
        (["-p", "hi", "--cwd", "/no/such/dir"], "--cwd: /no/such/dir is not a directory"),
        (["-p", "   "], "-p: the prompt is empty"),
        (["-p"], "-p: the prompt is empty"),  # no PROMPT, no QUERY: stdin (empty here)
        (["-p", "hi", "more"], "unrecognized argument 'more' (the prompt is -p's: 'hi')"),
        (["hi"], "unrecognized argument 'hi' (a prompt needs -p: rawtrio -p PROMPT)"),
        (["-p", "hi", "--max-turns", "0"], "--max-steps: expected a positive integer, got 0"),
        (["-p", "hi", "--permission-mode", "yolo"], "'yolo' is not a permission mode"),
        (["-p", "hi", "--allowedTools", "Bash(ls"], "'Bash(ls' is not a tool name"),
        (["-p", "hi", "--allowedTools", "Nope"], "'Nope': no such tool"),
        (["-p", "hi", "--disallowedTools", "Edit(x"], "'Edit(x' is not a tool name"),
        (["-p", "hi", "--disallowedTools", "TodoWrite(x)"], "cannot apply to todo_write"),
        (["-p", "hi", "--input-format", "stream-json"], "give -p without a prompt"),
        (["--input-format", "stream-json"], "--input-format applies only to headless"),
        (["-p", "hi", "--fork"], "--fork needs --continue or --resume ID"),
        (["--continue", "--resume", "x"], "argument -r/--resume: not allowed with argument"),
        (["-p", "hi", "--resume"], "argument -r/--resume: expected one argument"),
    ],
)
def test_bad_usage_exits_2_with_a_clear_message(
    iso: Isolation, args: list[str], message: str
) -> None:
    done = run_rawtrio(iso, *args, env={"ANTHROPIC_API_KEY": "k"})
    assert done.returncode == 2, done
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_bad_provider_in_the_environment_is_a_usage_error(iso: Isolation) -> None:
    done = run_rawtrio(iso, "-p", "hi", env={"RAWTRIO_PROVIDER": "gemini"})
    assert done.returncode == 2
    assert "RAWTRIO_PROVIDER: expected one of anthropic, openai-chat, openai-responses" in (
        done.stderr
    )


def test_output_format_without_a_prompt_is_a_usage_error(iso: Isolation) -> None:
    done = run_rawtrio(iso, "--output-format", "json", env={"ANTHROPIC_API_KEY": "k"})
    assert done.returncode == 2
    assert "--output-format applies only to headless runs (-p PROMPT)" in done.stderr


@pytest.mark.parametrize(
    ("provider", "env_var"),
    [
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("openai-chat", "OPENAI_API_KEY"),
        ("openai-responses", "OPENAI_API_KEY"),
    ],
)
def test_no_credentials_exits_4_saying_how_to_provide_them(
    iso: Isolation, fake_model: FakeModel, provider: str, env_var: str
) -> None:
    done = run_rawtrio(
        iso, "-p", "say hello", "--provider", provider, "--base-url", fake_model.url_for(provider)
    )
    assert done.returncode == 4
    assert f"no API key for {provider}: set {env_var}" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_the_other_providers_key_does_not_count(iso: Isolation) -> None:
    done = run_rawtrio(
        iso, "-p", "say hello", "--provider", "openai-chat", env={"ANTHROPIC_API_KEY": "k"}
    )
    assert done.returncode == 4
    assert "set OPENAI_API_KEY" in done.stderr


def test_an_empty_key_counts_as_none(iso: Isolation) -> None:
    done = run_rawtrio(iso, "-p", "say hello", env={"ANTHROPIC_API_KEY": ""})
    assert done.returncode == 4


def test_the_help_lists_every_headless_flag(iso: Isolation) -> None:
    done = run_rawtrio(iso, "--help")
    assert done.returncode == 0
    flags = set(re.findall(r"--[a-z][a-z-]+", done.stdout))
    expected = {"--version", "--print", "--output-format", "--provider", "--model", "--base-url"}
    expected |= {"--continue", "--resume", "--fork"}
    assert expected | {"--max-steps", "--cwd", "--sigterm-grace"} <= flags
    # Claude Code's (docs/compat.md): `--allowedTools` shows as `--allowed` here.
    claude = {"--verbose", "--input-format", "--max-turns", "--permission-mode"}
    claude |= {"--allowed-tools", "--disallowed-tools", "--system-prompt"}
    assert claude | {"--append-system-prompt"} <= flags
    assert "rawtrio sessions" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", os.fsdecode(b"\xff\xfe")], "the value of -p is not valid UTF-8 (byte 0xff"),
        # A lone surrogate spelled in UTF-8 (CESU-8) is not UTF-8 either.
        (["-p", os.fsdecode(b"hi \xed\xa0\x80")], "the value of -p is not valid UTF-8 (byte 0xed"),
        (["-p", "hi", "--model", os.fsdecode(b"m\xc3")], "the value of --model is not valid UTF-8"),
        (["sessions", "rename", "x", os.fsdecode(b"\xc3")], "argument 4 is not valid UTF-8"),
    ],
)
def test_an_argument_that_is_not_utf8_exits_2_naming_it(
    iso: Isolation, args: list[str], message: str
) -> None:
    done = run_rawtrio(iso, *args, env={"ANTHROPIC_API_KEY": "k"})
    assert done.returncode == 2, done
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert "UnicodeEncodeError" not in done.stderr
    assert done.stdout == ""


def test_a_prompt_on_stdin_that_is_not_utf8_exits_2_saying_so(iso: Isolation) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rawtrio", "-p", "-"],
        cwd=iso.cwd,
        env=iso.env({"ANTHROPIC_API_KEY": "k"}),
        input=b"say \xff hello",
        capture_output=True,
        timeout=LIVENESS_S,
        check=False,
    )
    assert done.returncode == 2, done
    assert b"standard input is not valid UTF-8 (byte 0xff at offset 4)" in done.stderr
    assert b"Traceback" not in done.stderr
    assert done.stdout == b""
