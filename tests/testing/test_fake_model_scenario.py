"""Scenario format: strict parsing and reply selection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rawtrio.testing.fake_model import Scenario, ScenarioError

SCENARIO = {
    "rules": [
        {"match": "re:^run (\\w+)$", "replies": [{"text": "ran"}]},
        {"match": "hello", "replies": [{"text": "hi"}, {"text": "again"}]},
        {"match": "*", "replies": [{"text": "anything"}]},
    ]
}


def test_first_matching_rule_wins_substring_then_regex_then_star() -> None:
    scenario = Scenario.from_dict(SCENARIO)
    assert scenario.pick("say hello", 0).text == "hi"
    assert scenario.pick("run tests", 0).text == "ran"
    assert scenario.pick("something", 0).text == "anything"


def test_step_selects_reply_and_past_the_end_is_done() -> None:
    scenario = Scenario.from_dict(SCENARIO)
    assert scenario.pick("hello", 1).text == "again"
    assert scenario.pick("hello", 2).text == "done"


def test_no_rule_matched_says_so_in_text() -> None:
    scenario = Scenario.from_dict({"rules": [{"match": "x", "replies": []}]})
    assert scenario.pick("abc", 0).text == "fake-model: no rule matched abc"


def test_from_file_reads_json(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCENARIO))
    assert Scenario.from_file(path).pick("hello", 0).text == "hi"


def test_tool_call_fields_are_parsed() -> None:
    reply = {"tool_calls": [{"name": "bash", "arguments": {"cmd": "ls"}, "id": "t1"}]}
    scenario = Scenario.from_dict({"rules": [{"match": "*", "replies": [reply]}]})
    call = scenario.pick("x", 0).tool_calls[0]
    assert (call.name, call.id, call.arguments_json()) == ("bash", "t1", '{"cmd":"ls"}')


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ({"rules": [{"match": "*", "replies": [{"txt": "typo"}]}]}, "rules[0].replies[0]"),
        ({"rules": [{"replies": []}]}, "rules[0].match"),
        ({"rules": [{"match": "re:(", "replies": []}]}, "bad regex"),
        ({"rules": [{"match": "*", "replies": [{"chunk": 0}]}]}, "chunk"),
        ({"rules": [{"match": "*", "replies": [{"cut_after": True}]}]}, "cut_after"),
        ({"rules": [{"match": "*", "replies": [{"tool_calls": [{}]}]}]}, "name: required"),
        ({"rules": [{"match": "*", "replies": [{"error": {"type": "x"}}]}]}, "status"),
        ({"rules": [{"match": "*", "replies": [{"fail_times": 0}]}]}, "fail_times"),
        (
            {
                "rules": [
                    {"match": "*", "replies": [{"error": {"status": 529, "retry_after_ms": "1"}}]}
                ]
            },
            "retry_after_ms",
        ),
    ],
)
def test_bad_scenarios_are_refused_with_the_place(data: object, where: str) -> None:
    with pytest.raises(ScenarioError, match=where.replace("[", r"\[").replace("]", r"\]")):
        Scenario.from_dict(data)
