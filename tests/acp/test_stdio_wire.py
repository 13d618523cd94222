"""`rawtrio acp` on stdio, driven with raw JSON-RPC lines: bad input gets the right error
and the connection goes on; stdout carries protocol messages only; `session/load`
replays before it answers. One rawtrio process serves the whole module.
"""

from __future__ import annotations

import itertools
import json
import queue
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.acp.conftest import LIVENESS_S, FakeModel, acp_argv, acp_env
from tests.headless.support import Isolation

MAX_MESSAGE = 4096


class RawClient:
    """Lines in, parsed messages out (a thread reads stdout; nothing else is allowed there)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.not_json: list[str] = []
        self._ids = itertools.count(1000)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send_raw(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def send(self, method: str, params: Any = None, *, rid: Any = "auto") -> Any:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if rid == "auto":
            rid = next(self._ids)
        if rid is not None:
            msg["id"] = rid
        if params is not None:
            msg["params"] = params
        self.send_raw(json.dumps(msg))
        return rid

    def next(self) -> dict[str, Any]:
        line = self.lines.get(timeout=LIVENESS_S)
        assert line is not None, "rawtrio closed stdout"
        try:
            msg: dict[str, Any] = json.loads(line)
        except ValueError:
            self.not_json.append(line)
            raise
        assert msg.get("jsonrpc") == "2.0", line
        return msg

    def until_response(self, rid: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The response to `rid`, and the messages that came before it."""
        before: list[dict[str, Any]] = []
        while True:
            msg = self.next()
            if "method" not in msg and msg.get("id") == rid:
                return msg, before
            before.append(msg)

    def call(self, method: str, params: Any = None) -> dict[str, Any]:
        return self.until_response(self.send(method, params))[0]


@pytest.fixture(scope="module")
def client(fake_model: FakeModel, iso: Isolation) -> Iterator[RawClient]:
    proc = subprocess.Popen(
        acp_argv(fake_model, "--max-message", str(MAX_MESSAGE)),
        env=acp_env(iso),
        cwd=iso.cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    c = RawClient(proc)
    try:
        first = c.call("session/list", {})
        assert first["error"]["code"] == -32600  # before initialize
        assert "initialize" in first["error"]["message"]
        init = c.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert init["result"]["protocolVersion"] == 1
        yield c
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=LIVENESS_S)
        c.reader.join(timeout=LIVENESS_S)
        assert proc.stdout is not None
        proc.stdout.close()
        assert c.not_json == []


def test_invalid_json_gets_parse_error_and_the_connection_survives(client: RawClient) -> None:
    client.send_raw('{"jsonrpc": "2.0", "id": 1, "method": ')
    err = client.next()
    assert err["id"] is None
    assert err["error"]["code"] == -32700
    assert "parse error" in err["error"]["message"]
    assert "result" in client.call("session/list", {})


@pytest.mark.parametrize(
    ("frame", "code", "words"),
    [
        ('[{"jsonrpc": "2.0", "id": 1, "method": "initialize"}]', -32600, "batch"),
        ('"just a string"', -32600, "JSON object"),
        ('{"jsonrpc": "1.0", "id": 7, "method": "session/list"}', -32600, "jsonrpc"),
        ('{"jsonrpc": "2.0", "id": 7.5, "method": "session/list"}', -32600, "id must be"),
        ('{"jsonrpc": "2.0", "id": 8, "method": 42}', -32600, "method must be"),
        ('{"jsonrpc": "2.0", "id": 9, "method": "session/list", "params": [1]}', -32602, "object"),
        ('{"jsonrpc": "2.0", "id": 10, "method": "nope/nothing"}', -32601, "nope/nothing"),
    ],
)
def test_malformed_frames_get_the_right_error(
    client: RawClient, frame: str, code: int, words: str
) -> None:
    client.send_raw(frame)
    err = client.next()
    assert err["error"]["code"] == code, err
    assert words in err["error"]["message"]


@pytest.mark.parametrize(
    ("method", "params", "words"),
    [
        ("session/new", {"cwd": 5, "mcpServers": []}, "cwd must be a string, got a number"),
        ("session/new", {"cwd": "relative/dir", "mcpServers": []}, "absolute path"),
        ("session/new", {"cwd": "/", "mcpServers": "none"}, "mcpServers must be an array"),
        ("session/prompt", {"sessionId": "x", "prompt": "hi"}, "prompt must be an array"),
        ("session/prompt", {"sessionId": 3, "prompt": []}, "sessionId must be a string"),
        (
            "session/prompt",
            {"sessionId": "x", "prompt": [{"type": "image", "data": "", "mimeType": "a"}]},
            "image content is not supported",
        ),
        ("session/list", {"cursor": "bogus!"}, "cursor"),
        (
            "session/new",
            {"cwd": "/", "mcpServers": [{"type": "http", "name": "h", "url": "u", "headers": []}]},
            "mcpServers[0].url must be an http:// or https:// URL",
        ),
        (
            "session/new",
            {"cwd": "/", "mcpServers": [{"type": "sse", "name": "s", "url": "http://x/"}]},
            "'sse' MCP servers are not supported",
        ),
        ("initialize", {"protocolVersion": "1"}, "protocolVersion must be an integer"),
    ],
)
def test_wrong_field_types_are_named(
    client: RawClient, method: str, params: dict[str, Any], words: str
) -> None:
    err = client.call(method, params)["error"]
    assert err["code"] == -32602, err
    assert words in err["message"]


def test_unknown_session_is_a_fast_error(client: RawClient) -> None:
    started = time.monotonic()
    for method, params in [
        ("session/prompt", {"sessionId": "no-such", "prompt": [{"type": "text", "text": "x"}]}),
        ("session/set_mode", {"sessionId": "no-such", "modeId": "plan"}),
        ("session/close", {"sessionId": "no-such"}),
        ("session/load", {"sessionId": "no-such", "cwd": "/", "mcpServers": []}),
    ]:
        err = client.call(method, params)["error"]
        assert err["code"] == -32002, (method, err)
        assert "unknown session 'no-such'" in err["message"]
        assert err["data"] == {"reason": "not_live"}, (method, err)
    assert time.monotonic() - started < LIVENESS_S


def test_oversized_frame_is_rejected_and_the_connection_survives(client: RawClient) -> None:
    client.send_raw(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x" * (MAX_MESSAGE * 3)}))
    err = client.next()
    assert err["error"]["code"] == -32600
    assert "too large" in err["error"]["message"]
    assert "result" in client.call("session/list", {})


def test_load_replays_the_history_before_its_response(client: RawClient, iso: Isolation) -> None:
    sid = client.call("session/new", {"cwd": str(iso.cwd), "mcpServers": []})["result"]["sessionId"]
    prompt = [{"type": "text", "text": "say hello"}]
    done = client.call("session/prompt", {"sessionId": sid, "prompt": prompt})
    assert done["result"] == {"stopReason": "end_turn"}
    rid = client.send("session/load", {"sessionId": sid, "cwd": str(iso.cwd), "mcpServers": []})
    response, before = client.until_response(rid)
    assert "modes" in response["result"]
    kinds = [m["params"]["update"]["sessionUpdate"] for m in before]
    assert kinds[:3] == ["user_message_chunk", "agent_thought_chunk", "agent_message_chunk"]
    said = before[2]["params"]["update"]["content"]["text"]
    assert said == "Hello from the fake model."


def test_cancel_for_a_session_without_a_turn_changes_nothing(
    client: RawClient, iso: Isolation
) -> None:
    sid = client.call("session/new", {"cwd": str(iso.cwd), "mcpServers": []})["result"]["sessionId"]
    client.send("session/cancel", {"sessionId": sid}, rid=None)
    client.send("session/cancel", {"sessionId": "no-such"}, rid=None)
    prompt = [{"type": "text", "text": "say hello"}]
    done = client.call("session/prompt", {"sessionId": sid, "prompt": prompt})
    assert done["result"] == {"stopReason": "end_turn"}


def test_cancel_request_for_a_prompt_answers_cancelled(client: RawClient, iso: Isolation) -> None:
    sid = client.call("session/new", {"cwd": str(iso.cwd), "mcpServers": []})["result"]["sessionId"]
    prompt = [{"type": "text", "text": "think slowly"}]
    rid = client.send("session/prompt", {"sessionId": sid, "prompt": prompt})
    client.send("$/cancel_request", {"requestId": rid}, rid=None)
    response, _ = client.until_response(rid)
    assert response["result"] == {"stopReason": "cancelled"}


def test_the_title_command_renames_the_session(client: RawClient, iso: Isolation) -> None:
    sid = client.call("session/new", {"cwd": str(iso.cwd), "mcpServers": []})["result"]["sessionId"]
    rid = client.send(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "/title Mine"}]}
    )
    response, before = client.until_response(rid)
    assert response["result"] == {"stopReason": "end_turn"}
    info = [m["params"]["update"] for m in before if m.get("method") == "session/update"]
    assert {"sessionUpdate": "session_info_update", "title": "Mine"}.items() <= info[-1].items()
    listed = client.call("session/list", {"cwd": str(iso.cwd)})["result"]["sessions"]
    assert any(s["sessionId"] == sid and s["title"] == "Mine" for s in listed)


def test_a_failed_turn_is_an_error_response(client: RawClient, iso: Isolation) -> None:
    sid = client.call("session/new", {"cwd": str(iso.cwd), "mcpServers": []})["result"]["sessionId"]
    prompt = [{"type": "text", "text": "fail please"}]
    err = client.call("session/prompt", {"sessionId": sid, "prompt": prompt})["error"]
    assert err["code"] == -32603
    assert "the turn failed" in err["message"]
    assert "bad thing" in err["message"]


def test_the_compact_command_compacts(client: RawClient, iso: Isolation) -> None:
    sid = client.call("session/new", {"cwd": str(iso.cwd), "mcpServers": []})["result"]["sessionId"]
    for text in ("say hello", "/compact the greeting"):
        prompt = [{"type": "text", "text": text}]
        done = client.call("session/prompt", {"sessionId": sid, "prompt": prompt})
        assert done["result"] == {"stopReason": "end_turn"}, done


def test_the_compact_extension_method_answers_with_the_compaction_outcome(
    client: RawClient, iso: Isolation
) -> None:
    sid = client.call("session/new", {"cwd": str(iso.cwd), "mcpServers": []})["result"]["sessionId"]
    done = client.call("_rawtrio/compact", {"sessionId": sid, "focus": "the tests"})
    # A session with nothing older than its last turns: nothing to summarize, unchanged.
    assert done["result"]["outcome"] == "unchanged", done
    assert done["result"]["tokensAfter"] == done["result"]["tokensBefore"]
    bad = client.call("_rawtrio/compact", {"sessionId": sid, "focus": 3})
    assert bad["error"]["code"] == -32602
    assert "focus must be a string" in bad["error"]["message"]


# JSON escapes can spell text that is not Unicode: a lone surrogate cannot be encoded, so
# neither the frame's own fields nor an error echoing them may reach the writer as is.
@pytest.mark.parametrize(
    ("frame", "rid", "code", "words"),
    [
        (
            r'{"jsonrpc": "2.0", "id": 21, "method": "x\ud800"}',
            21,
            -32600,
            r"method is not valid Unicode: it holds a lone surrogate (\ud800)",
        ),
        (
            r'{"jsonrpc": "2.0", "id": "\udfff", "method": "session/list"}',
            None,
            -32600,
            r"id is not valid Unicode: it holds a lone surrogate (\udfff)",
        ),
        (
            r'{"jsonrpc": "2.0", "id": 22, "method": "session/list", "params": {"cwd": "/\udc80"}}',
            22,
            -32602,
            r"invalid params: params.cwd is not valid Unicode",
        ),
        (
            r'{"jsonrpc": "2.0", "id": 23, "method": "session/list", "params": {"\ud83d": 1}}',
            23,
            -32602,
            r"(a key) is not valid Unicode: it holds a lone surrogate (\ud83d)",
        ),
    ],
)
def test_text_that_is_not_unicode_gets_an_error_and_the_connection_survives(
    client: RawClient, frame: str, rid: Any, code: int, words: str
) -> None:
    client.send_raw(frame)
    err = client.next()
    assert err["id"] == rid, err
    assert err["error"]["code"] == code, err
    assert words in err["error"]["message"]
    assert client.proc.poll() is None
    assert "result" in client.call("session/list", {})


def test_a_surrogate_pair_is_text_and_a_notification_with_a_lone_one_is_dropped(
    client: RawClient,
) -> None:
    client.send_raw(r'{"jsonrpc": "2.0", "method": "session/cancel\udc00", "params": {}}')
    pair = (
        r'{"jsonrpc": "2.0", "id": 24, "method": "session/list", "params": {"_x": "\ud83d\ude00"}}'
    )
    client.send_raw(pair)
    # The notification got no answer; the next message is the answer to the valid frame.
    assert "result" in client.until_response(24)[0]


def test_a_prompt_with_a_lone_surrogate_is_refused_and_changes_nothing(
    client: RawClient, iso: Isolation
) -> None:
    sid = client.call("session/new", {"cwd": str(iso.cwd), "mcpServers": []})["result"]["sessionId"]
    bad = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 25,
            "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "say hello \ud800"}]},
        }
    )
    assert r"\ud800" in bad  # json.dumps escapes it: the frame itself is valid UTF-8
    client.send_raw(bad)
    err = client.until_response(25)[0]["error"]
    assert err["code"] == -32602
    assert "params.prompt[0].text is not valid Unicode" in err["message"]
    prompt = [{"type": "text", "text": "say hello"}]
    done = client.call("session/prompt", {"sessionId": sid, "prompt": prompt})
    assert done["result"] == {"stopReason": "end_turn"}
    rid = client.send("session/load", {"sessionId": sid, "cwd": str(iso.cwd), "mcpServers": []})
    _, replayed = client.until_response(rid)
    said = [
        m["params"]["update"]["content"]["text"]
        for m in replayed
        if m["params"]["update"]["sessionUpdate"] == "user_message_chunk"
    ]
    assert said == ["say hello"]  # the refused prompt left no trace


def test_a_frame_answered_just_before_stdin_closes_is_still_written(
    fake_model: FakeModel, iso: Isolation
) -> None:
    frames = [
        r'{"jsonrpc": "2.0", "id": "\udfff", "method": "x"}',
        r'{"jsonrpc": "2.0", "id": 1, "method": "x\ud800"}',
    ]
    done = subprocess.run(
        acp_argv(fake_model),
        env=acp_env(iso),
        cwd=iso.cwd,
        input="\n".join(frames) + "\n",
        capture_output=True,
        text=True,
        timeout=LIVENESS_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(a["id"], a["error"]["code"]) for a in answers] == [(None, -32600), (1, -32600)]
    assert "Traceback" not in done.stderr


def test_a_model_reply_that_is_not_unicode_reaches_the_client_as_replacement_characters(
    client: RawClient, iso: Isolation
) -> None:
    sid = client.call("session/new", {"cwd": str(iso.cwd), "mcpServers": []})["result"]["sessionId"]
    prompt = [{"type": "text", "text": "answer with a lone surrogate"}]
    rid = client.send("session/prompt", {"sessionId": sid, "prompt": prompt})
    response, before = client.until_response(rid)
    # The turn completed: the reply was stored with U+FFFD in the surrogate's place.
    assert response.get("result") == {"stopReason": "end_turn"}, response
    chunks = [
        m["params"]["update"]["content"]["text"]
        for m in before
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]
    assert "".join(chunks) == "bad \ufffd text"
    assert client.proc.poll() is None
    assert "result" in client.call("session/list", {})


def test_log_file_gets_the_log_and_stderr_does_not(
    fake_model: FakeModel, iso: Isolation, tmp_path: Path
) -> None:
    """`--log-file` used to be ignored: the entry point's stderr handler was there first."""
    log_file = tmp_path / "logs" / "acp.log"
    proc = subprocess.Popen(
        acp_argv(fake_model, "--log-file", str(log_file)),
        env=acp_env(iso),
        cwd=iso.cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # A notification that is not Unicode is dropped with a warning in the log.
    _out, err = proc.communicate(
        r'{"jsonrpc": "2.0", "method": "session/cancel\udc00", "params": {}}' + "\n",
        timeout=LIVENESS_S,
    )
    assert proc.returncode == 0, err
    assert "notification dropped" in log_file.read_text(encoding="utf-8")
    assert "notification dropped" not in err
    assert log_file.stat().st_mode & 0o777 == 0o600
