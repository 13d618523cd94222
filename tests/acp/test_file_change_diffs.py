"""The files a `bash` call changed reach an ACP client as `diff` content on the call's final
`tool_call_update` (binary, deleted and mode-only changes as a text block): the mapping,
then `rawtrio acp` over real JSON-RPC on stdio."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rawtrio import events as ev
from rawtrio.acp.updates import UpdateMapper
from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from tests.acp.conftest import HERE, LIVENESS_S, FakeModel, acp_argv, acp_env, node_ready
from tests.acp.test_stdio_wire import RawClient
from tests.headless.conftest import fake_model_process
from tests.headless.support import Isolation

BASH = "sed -i 's/one/ONE/' a.txt && printf 'new file\\n' > b.txt && printf '\\000\\001bin' > c.bin"
SCENARIO: dict[str, Any] = {
    "rules": [
        {
            "match": "change with bash",
            "replies": [
                {"tool_calls": [{"name": "bash", "arguments": {"command": BASH}}]},
                {"text": "changed"},
            ],
        },
        {"match": "*", "replies": [{"text": "ok"}]},
    ]
}


def finished(details: dict[str, Any]) -> ev.ToolCallFinished:
    return ev.ToolCallFinished(
        session_id="s",
        seq=1,
        turn_id="t",
        call_id="c",
        name="bash",
        status=ToolStatus.OK,
        content="output",
        started=True,
        details=freeze(details),
    )


def test_each_changed_file_is_a_diff_and_the_rest_one_text_block() -> None:
    details = {
        "exit_code": 0,
        "file_changes": [
            {"path": "a.txt", "kind": "modified", "old_text": "1\n", "new_text": "2\n"},
            {"path": "b.txt", "kind": "created", "old_text": None, "new_text": "new\n"},
            {"path": "/abs/c.txt", "kind": "modified", "old_text": "", "new_text": "x"},
            {"path": "d.bin", "kind": "created", "note": "binary file (5 bytes)"},
            {"path": "e.txt", "kind": "deleted", "note": "deleted (3 bytes)"},
            {"path": "f.sh", "kind": "mode", "note": "mode 644 \u2192 755"},
        ],
        "file_changes_left_out": 4,
    }
    (update,) = UpdateMapper("/w").updates(finished(details))
    assert update["status"] == "completed"
    assert update["content"] == [
        {"type": "content", "content": {"type": "text", "text": "output"}},
        {"type": "diff", "path": "/w/a.txt", "oldText": "1\n", "newText": "2\n"},
        {"type": "diff", "path": "/w/b.txt", "newText": "new\n"},
        {"type": "diff", "path": "/abs/c.txt", "oldText": "", "newText": "x"},
        {
            "type": "content",
            "content": {
                "type": "text",
                "text": "files this call changed, not shown as diffs:\n"
                "  d.bin: created, binary file (5 bytes)\n"
                "  e.txt: deleted (3 bytes)\n"
                "  f.sh: mode 644 \u2192 755\n"
                "  and 4 more changed file(s), not listed",
            },
        },
    ]
    # rawOutput keeps the facts, not the texts a second time.
    raw = update["rawOutput"]["details"]
    assert raw["exit_code"] == 0
    assert raw["file_changes"][0] == {"path": "a.txt", "kind": "modified"}
    assert raw["file_changes_left_out"] == 4


def test_a_call_without_file_changes_has_no_diff() -> None:
    (update,) = UpdateMapper("/w").updates(finished({"exit_code": 0}))
    assert update["content"] == [{"type": "content", "content": {"type": "text", "text": "output"}}]


@pytest.fixture(scope="module")
def bash_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeModel]:
    with fake_model_process(SCENARIO, tmp_path_factory.mktemp("diff-model")) as fake:
        yield FakeModel(fake.base_url)


def bash_turn(model: FakeModel, iso: Isolation) -> list[dict[str, Any]]:
    """One "change with bash" turn in a fresh `rawtrio acp` over stdio, in `iso.cwd` (with
    `a.txt` in it); the messages the client got before the `session/prompt` answer."""
    iso.cwd.mkdir(parents=True)
    (iso.cwd / "a.txt").write_text("one\ntwo\n")
    proc = subprocess.Popen(
        acp_argv(model, "--mode", "bypass"),
        env=acp_env(iso),
        cwd=iso.cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    client = RawClient(proc)
    try:
        init = client.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["result"]["protocolVersion"] == 1
        new = client.call("session/new", {"cwd": str(iso.cwd), "mcpServers": []})
        sid = new["result"]["sessionId"]
        prompt = [{"type": "text", "text": "change with bash"}]
        answer, before = client.until_response(
            client.send("session/prompt", {"sessionId": sid, "prompt": prompt})
        )
        assert answer["result"]["stopReason"] == "end_turn", answer
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=LIVENESS_S)
        client.reader.join(timeout=LIVENESS_S)
        assert proc.stdout is not None
        proc.stdout.close()
    return before


def test_a_bash_edit_reaches_the_client_as_diff_content(
    bash_model: FakeModel, tmp_path: Path
) -> None:
    iso = Isolation(tmp_path)
    before = bash_turn(bash_model, iso)
    updates = [m["params"]["update"] for m in before if m.get("method") == "session/update"]
    done = [
        u
        for u in updates
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"
    ]
    assert len(done) == 1, updates
    content = done[0]["content"]
    diffs = {Path(c["path"]).name: c for c in content if c["type"] == "diff"}
    assert set(diffs) == {"a.txt", "b.txt"}
    assert Path(diffs["a.txt"]["path"]).resolve() == (iso.cwd / "a.txt").resolve()
    assert diffs["a.txt"]["oldText"] == "one\ntwo\n"
    assert diffs["a.txt"]["newText"] == "ONE\ntwo\n"
    assert "oldText" not in diffs["b.txt"]
    assert diffs["b.txt"]["newText"] == "new file\n"
    texts = [c["content"]["text"] for c in content if c["type"] == "content"]
    assert "  c.bin: created, binary file (5 bytes)" in texts[-1].splitlines()
    assert done[0]["rawOutput"]["details"]["file_changes"][0] == {
        "path": "a.txt",
        "kind": "modified",
        "old_mode": 0o644 & ~_umask(),
        "new_mode": 0o644 & ~_umask(),
    }


def test_what_the_turn_changed_reaches_the_client_before_the_prompt_ends(
    bash_model: FakeModel, tmp_path: Path
) -> None:
    """The turn-end checkpoint summary the chat shows is a thought of the turn's for an
    editor too, sent before the `session/prompt` answer, without the chat's commands."""
    before = bash_turn(bash_model, Isolation(tmp_path))
    thoughts = [
        m["params"]["update"]
        for m in before
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_thought_chunk"
    ]
    summaries = [t for t in thoughts if "checkpoint 1" in t["content"]["text"]]
    assert len(summaries) == 1, thoughts
    text = summaries[0]["content"]["text"]
    assert text.startswith("[3 files changed (+"), text
    assert "/undo" not in text
    assert "/diff" not in text
    assert "-notice-" in summaries[0]["messageId"]


def test_the_typescript_sdk_accepts_the_diff_content(bash_model: FakeModel, tmp_path: Path) -> None:
    """The official SDK parses each `session/update` against the ACP schema and drops a
    content block that does not match it: every block must come through."""
    node = node_ready()
    iso = Isolation(tmp_path)
    iso.cwd.mkdir(parents=True)
    (iso.cwd / "a.txt").write_text("one\ntwo\n")
    env = acp_env(iso)
    env.update(
        ACP_CMD=json.dumps(acp_argv(bash_model, "--mode", "bypass")),
        ACP_CWD=str(iso.cwd),
        ACP_PROMPT="change with bash",
    )
    ran = subprocess.run(
        [node, str(HERE / "file_diffs.mjs")],
        env=env,
        cwd=iso.cwd,
        capture_output=True,
        text=True,
        timeout=LIVENESS_S * 2,
    )
    assert ran.returncode == 0, ran.stderr
    got = json.loads(ran.stdout.splitlines()[-1])
    assert "error" not in got, got
    assert got["stopReason"] == "end_turn"
    [done] = got["done"]
    kinds = [c["type"] for c in done["content"]]
    assert kinds == ["content", "diff", "diff", "content"], done["content"]
    a_diff, b_diff = done["content"][1:3]
    assert (a_diff["oldText"], a_diff["newText"]) == ("one\ntwo\n", "ONE\ntwo\n")
    assert b_diff["newText"] == "new file\n"
    assert "c.bin: created, binary file (5 bytes)" in done["content"][3]["content"]["text"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
