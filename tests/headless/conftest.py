"""The fake model server (as its own process, or on a thread when a test reads the requests
rawtrio sent), and an isolated place for each rawtrio run."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rawtrio.testing.fake_model import FakeModelServer, Scenario
from tests.headless.support import LIVENESS_S, Isolation, fake_model_in_thread

#: Replies by prompt (a substring of the user text); the first matching rule wins.
SCENARIO: dict[str, Any] = {
    "rules": [
        {"match": "say hello", "replies": [{"text": "Hello from the fake model."}]},
        {
            "match": "stall while streaming",
            # message_start, content_block_start, ping, then two text deltas; then silence.
            "replies": [{"text": "one two three four five six", "chunk": 4, "stall_after": 5}],
        },
        {
            "match": "sleep with a grandchild",
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "bash",
                            # bash → sh → sleep (a grandchild), and bash → sleep.
                            "arguments": {"command": "sh -c 'sleep 60; :' & sleep 60"},
                        }
                    ]
                },
                {"text": "slept"},
            ],
        },
        {
            "match": "sleep ignoring SIGTERM",
            "replies": [
                {
                    "tool_calls": [
                        {"name": "bash", "arguments": {"command": "trap '' TERM; sleep 60; :"}}
                    ]
                },
                {"text": "slept"},
            ],
        },
        {
            "match": "use a tool",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo tool-output"}}]},
                {"text": "The tool said tool-output."},
            ],
        },
        {
            "match": "keep calling tools",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo 1"}}]},
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo 2"}}]},
                {"text": "never reached with --max-steps 2"},
            ],
        },
        {
            "match": "write a note",
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "write_file",
                            "arguments": {"path": "note.txt", "content": "first\n"},
                        }
                    ]
                },
                {"text": "Wrote it."},
            ],
        },
        {"match": "refuse the key", "replies": [{"error": {"status": 401}}]},
        {
            "match": "overloaded once",
            "replies": [
                {
                    "text": "Recovered.",
                    "error": {"status": 529, "retry_after_ms": 20},
                    "fail_times": 1,
                }
            ],
        },
        {
            "match": "look then answer",
            "replies": [
                {
                    "text": "Let me look.",
                    "tool_calls": [{"name": "bash", "arguments": {"command": "true"}}],
                },
                {"text": "Done."},
            ],
        },
        # A lone surrogate: the wire carries it as the JSON escape "\ud800".
        {"match": "answer with a lone surrogate", "replies": [{"text": "bad \ud800 text"}]},
    ]
}


@dataclass(frozen=True)
class FakeModel:
    base_url: str
    openai_base_url: str

    def url_for(self, provider: str) -> str:
        return self.base_url if provider == "anthropic" else self.openai_base_url


@contextlib.contextmanager
def fake_model_process(scenario: dict[str, Any], folder: Path) -> Iterator[FakeModel]:
    """`python -m rawtrio.testing.fake_model` serving `scenario` on a free port."""
    path = folder / "scenario.json"
    path.write_text(json.dumps(scenario))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rawtrio.testing.fake_model",
            "--scenario",
            str(path),
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        urls = json.loads(proc.stdout.readline())
        yield FakeModel(urls["base_url"], urls["openai_base_url"])
    finally:
        proc.terminate()
        proc.wait(timeout=LIVENESS_S)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture(scope="session")
def fake_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeModel]:
    with fake_model_process(SCENARIO, tmp_path_factory.mktemp("fake-model")) as fake:
        yield fake


@pytest.fixture
def iso(tmp_path: Path) -> Isolation:
    return Isolation(tmp_path)


@pytest.fixture
def recorder() -> Iterator[FakeModelServer]:
    """SCENARIO served on a thread of the test process; `recorder.requests` is what came in."""
    with fake_model_in_thread(Scenario.from_dict(SCENARIO)) as server:
        yield server
