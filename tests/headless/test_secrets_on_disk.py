"""Secret values never reach disk: after a real run that used one everywhere it can appear
(model text split across deltas, thinking, tool arguments, tool output, hook env and hook
output), the database, its -wal/-shm files, the FTS index, the logs and the program's
output hold only `[redacted:NAME]` markers."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from rawtrio.testing.fake_model import Scenario
from tests.headless.support import Isolation, fake_model_in_thread, run_rawtrio

SECRET = "S3CRET-VALUE-1234"
MARKER = "[redacted:token]"

SCENARIO = {
    "rules": [
        {
            "match": "leak the secret",
            "replies": [
                {
                    "thinking": f"The token is {SECRET}, I should not say it.",
                    # Three characters per delta: the secret arrives split across deltas.
                    "text": f"The token is {SECRET} (oops).",
                    "chunk": 3,
                    "tool_calls": [
                        {"name": "bash", "arguments": {"command": f"echo out {SECRET}"}}
                    ],
                },
                {"text": f"Done; it printed {SECRET}."},
            ],
        }
    ]
}

HOOK = (
    "import os, sys; sys.stdin.read(); "
    "print('hook saw', os.environ['TOKEN']); "
    "sys.stderr.write('warning about ' + os.environ['TOKEN']); sys.exit(1)"
)


def config_text(python: str) -> str:
    return f"""
[variables.token]
value = "{SECRET}"
secret = true

[[hooks]]
event = "PreToolUse"
match = "bash"
command = [{json.dumps(python)}, "-c", {json.dumps(HOOK)}]
env = {{ TOKEN = {{ var = "token" }} }}

[[hooks]]
event = "PostToolUse"
command = [{json.dumps(python)}, "-c", {json.dumps(HOOK)}]
env = {{ TOKEN = {{ var = "token" }} }}
"""


def every_text_in(db: Path) -> str:
    """Every table's every value, the FTS shadow tables included, as one text."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        assert any(t.startswith("events_fts") for t in tables), tables
        out: list[str] = []
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                out.extend(
                    v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in row
                )
        hits = conn.execute(
            "SELECT count(*) FROM events_fts WHERE events_fts MATCH ?", ('"S3CRET"',)
        ).fetchone()[0]
        assert hits == 0
        return "\n".join(out)
    finally:
        conn.close()


@pytest.mark.parametrize("provider", ["anthropic", "openai-responses"])
def test_a_secret_used_everywhere_never_reaches_disk(tmp_path: Path, provider: str) -> None:
    iso = Isolation(tmp_path)
    config = tmp_path / "rawtrio.toml"  # the one file that may hold it: the user wrote it
    config.write_text(config_text(sys.executable))
    with fake_model_in_thread(Scenario.from_dict(SCENARIO)) as server:
        base = server.base_url if provider == "anthropic" else server.openai_base_url
        done = run_rawtrio(
            iso,
            "-p",
            "leak the secret",
            "--provider",
            provider,
            "--base-url",
            base,
            "--config",
            str(config),
            "--output-format",
            "events",
            env={"ANTHROPIC_API_KEY": "test-key", "OPENAI_API_KEY": "test-key"},
        )
        # The model was sent the redacted transcript, and accepted it.
        assert [r.status for r in server.requests] == [200, 200]
        second = json.dumps(server.requests[1].body)
    assert done.returncode == 0, done
    assert SECRET not in second
    assert MARKER in second
    events = done.json_lines()
    types = {e["type"] for e in events}
    assert {"hook_ran", "tool_call_finished", "text_delta"} <= types
    assert SECRET not in done.stdout
    assert SECRET not in done.stderr
    assert MARKER in done.stdout

    files = [p for p in tmp_path.rglob("*") if p.is_file() and p != config]
    databases = [p for p in files if p.name.endswith(".db")]
    assert databases, files
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path
    for db in databases:
        text = every_text_in(db)
        assert SECRET not in text
        assert MARKER in text
