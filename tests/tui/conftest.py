"""The fake model server for the terminal chat tests, and an isolated place per run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.headless.conftest import FakeModel, fake_model_process
from tests.headless.support import Isolation

#: Replies by prompt (a substring of the user text); the first matching rule wins.
SCENARIO: dict[str, Any] = {
    "rules": [
        {
            "match": "say hello",
            "replies": [
                {
                    "text": "# Greeting\n\nHello **from the fake** model.\n\n- first item\n"
                    "- second item\n\n```python\ndef answer():\n    return 42\n```\n",
                    "chunk": 5,
                    "delay_ms": 2,
                }
            ],
        },
        {
            "match": "sleep with a grandchild",
            "replies": [
                {
                    "text": "Starting the long job.",
                    "tool_calls": [
                        {
                            "name": "bash",
                            "arguments": {"command": "sh -c 'sleep 60; :' & sleep 60"},
                        }
                    ],
                },
                {"text": "slept"},
            ],
        },
        {
            "match": "delegate a quick job",
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "task",
                            "arguments": {"description": "quick job", "prompt": "child echoes"},
                        }
                    ]
                },
                {"text": "The subagent finished."},
            ],
        },
        {
            "match": "child echoes",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": "echo child-output"}}]},
                {"text": "The child echoed."},
            ],
        },
        {
            "match": "delegate the slow job",
            "replies": [
                {
                    "tool_calls": [
                        {
                            "name": "task",
                            "arguments": {"description": "slow job", "prompt": "child sleeps"},
                        }
                    ]
                },
                {"text": "never: the turn is cancelled"},
            ],
        },
        {
            "match": "child sleeps",
            "replies": [
                {
                    "text": "Sleeping a minute.",
                    "tool_calls": [
                        {"name": "bash", "arguments": {"command": "echo child-started; sleep 60"}}
                    ],
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
    ]
}


@pytest.fixture(scope="session")
def chat_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeModel]:
    with fake_model_process(SCENARIO, tmp_path_factory.mktemp("tui-fake-model")) as fake:
        yield fake


@pytest.fixture
def iso(tmp_path: Path) -> Isolation:
    return Isolation(tmp_path)
