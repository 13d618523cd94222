"""`task` children in real processes: stored under their parent, listed under it with
`sessions list --all`, nested in `sessions show`, never what `--continue` picks."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from rawtrio.testing.fake_model import FakeModelServer, Scenario
from tests.headless.support import Finished, Isolation, fake_model_in_thread, run_rawtrio

KEYS = {"ANTHROPIC_API_KEY": "test-key"}
SCENARIO = {
    "rules": [
        {"match": "child work", "replies": [{"text": "The child looked and found 3 files."}]},
        {"match": "say hello", "replies": [{"text": "Hello again."}]},
        {
            "match": "delegate",
            "replies": [
                {
                    "text": "Delegating.",
                    "tool_calls": [
                        {
                            "name": "task",
                            "arguments": {"description": "count files", "prompt": "child work"},
                        }
                    ],
                },
                {"text": "The subagent says 3 files."},
            ],
        },
    ]
}


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with fake_model_in_thread(Scenario.from_dict(SCENARIO)) as s:
        yield s


def ask(iso: Isolation, server: FakeModelServer, prompt: str, *flags: str) -> Finished:
    return run_rawtrio(
        iso,
        "-p",
        prompt,
        "--base-url",
        server.base_url,
        "--model",
        "test-model",
        "--output-format",
        "json",
        *flags,
        env=KEYS,
    )


def listed(iso: Isolation, *args: str) -> list[dict[str, object]]:
    done = run_rawtrio(iso, "sessions", "list", "--json", *args)
    assert done.returncode == 0, done
    rows: list[dict[str, object]] = json.loads(done.stdout)
    return rows


def test_a_child_is_stored_under_its_parent(iso: Isolation, server: FakeModelServer) -> None:
    done = ask(iso, server, "delegate please")
    assert done.returncode == 0, done
    [result] = done.json_lines()
    assert result["result"] == "The subagent says 3 files."
    parent_id = result["session_id"]
    # Only the parent is a top-level session; --all lists the child right under it.
    assert [r["id"] for r in listed(iso)] == [parent_id]
    rows = listed(iso, "--all")
    assert rows[0]["id"] == parent_id
    assert len(rows) == 2
    child = rows[1]
    assert child["parent_id"] == parent_id
    assert child["depth"] == 1
    assert child["title"] == "count files"
    table = run_rawtrio(iso, "sessions", "list", "--all").stdout
    assert "  count files" in table
    # `show` nests the child's transcript under the parent's task call.
    shown = run_rawtrio(iso, "sessions", "show", str(parent_id)).stdout
    assert "│ subagent count files" in shown
    assert "│ > child work" in shown
    assert "│ The child looked and found 3 files." in shown
    assert shown.index("│ > child work") < shown.index("The subagent says 3 files.")
    # --continue takes the parent, never the (more recently created) child.
    again = ask(iso, server, "say hello", "--continue")
    assert again.returncode == 0, again
    assert again.json_lines()[0]["session_id"] == parent_id


def test_a_named_agent_runs_the_child_and_stream_json_tags_its_events(
    iso: Isolation, server: FakeModelServer
) -> None:
    config = iso.home / ".config" / "rawtrio" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        '[agents.reader]\nsystem_prompt = "You only read."\ntools = ["read_file", "grep"]\n'
    )
    server.set_scenario(
        Scenario.from_dict(
            {
                "rules": [
                    {"match": "child work", "replies": [{"text": "read it"}]},
                    {
                        "match": "delegate",
                        "replies": [
                            {
                                "tool_calls": [
                                    {
                                        "name": "task",
                                        "arguments": {
                                            "description": "read",
                                            "prompt": "child work",
                                            "agent": "reader",
                                        },
                                    }
                                ]
                            },
                            {"text": "done"},
                        ],
                    },
                ]
            }
        )
    )
    done = ask(iso, server, "delegate please").returncode
    assert done == 0
    child_request = next(r for r in server.requests if r.user_text == "child work")
    system = json.dumps(child_request.body.get("system"))
    assert "You only read." in system
    assert [t["name"] for t in child_request.body["tools"]] == ["read_file", "grep"]
    streamed = run_rawtrio(
        iso,
        "-p",
        "delegate again",
        "--base-url",
        server.base_url,
        "--model",
        "test-model",
        "--output-format",
        "stream-json",
        env=KEYS,
    )
    assert streamed.returncode == 0, streamed
    lines = streamed.json_lines()
    started = [line for line in lines if line["type"] == "subagent_started"]
    assert len(started) == 1
    child_id = started[0]["child_session_id"]
    nested = [line for line in lines if line["type"] == "subagent_event"]
    assert nested
    assert {line["child_session_id"] for line in nested} == {child_id}
    assert {line["event"]["session_id"] for line in nested} == {child_id}
    assert any(line["event"]["type"] == "turn_ended" for line in nested)
