"""`rawtrio acp` (stdio, what an editor starts) attached to a real `rawtrio serve`: the real
program on both sides, the real socket, the fake model server over loopback; the test
plays the editor, speaking ACP on the relay's stdin/stdout."""

from __future__ import annotations

import contextlib
import itertools
import json
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import psutil
import pytest

from tests.headless.support import LIVENESS_S, rawtrio_argv
from tests.headless.support import wait_until as wait_for
from tests.host.conftest import scenario
from tests.host.fake_host import fake_host
from tests.host.support import HostProcess, Place

SCENARIO: dict[str, Any] = scenario(
    {
        "match": "slow then done",
        "replies": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 3"}}]},
            {"text": "done after all"},
        ],
    },
    {
        "match": "who runs tools",
        "replies": [
            {
                "tool_calls": [
                    {"name": "bash", "arguments": {"command": "echo $MARK; pwd; echo parent=$PPID"}}
                ]
            },
            {"text": "told"},
        ],
    },
)


class Editor:
    """An editor-like ACP client on a `rawtrio acp` subprocess's stdio."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self._ids = itertools.count(1)
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    @classmethod
    def start(cls, place: Place, *args: str, cwd: Path | None = None, **env: str) -> Editor:
        proc = subprocess.Popen(
            rawtrio_argv("acp", "--sigterm-grace", "0.2", *args),
            cwd=cwd or place.iso.cwd,
            env=place.env(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        return cls(proc)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:
            for line in self.proc.stdout:
                self.messages.put(json.loads(line))
        self.messages.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr:
            for line in self.proc.stderr:
                self.stderr.append(line.decode(errors="replace"))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> int:
        rid = next(self._ids)
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def next(self) -> dict[str, Any] | None:
        try:
            message = self.messages.get(timeout=LIVENESS_S)
        except queue.Empty:
            raise AssertionError(f"nothing from rawtrio acp within {LIVENESS_S} s") from None
        if message is not None:
            self.seen.append(message)
        return message

    def until(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        while True:
            message = self.next()
            assert message is not None, f"stdout closed; stderr: {''.join(self.stderr)}"
            if predicate(message):
                return message

    def answer_of(self, rid: int) -> dict[str, Any]:
        return self.until(lambda m: m.get("id") == rid and "method" not in m)

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.answer_of(self.request(method, params))

    def initialize(self, **caps: Any) -> dict[str, Any]:
        return self.call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": caps,
                "clientInfo": {"name": "test-editor", "version": "1"},
            },
        )

    def new_session(self, cwd: Path) -> str:
        answer = self.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        assert "result" in answer, answer
        return str(answer["result"]["sessionId"])

    def updates(self, sid: str) -> list[dict[str, Any]]:
        return [
            m["params"]["update"]
            for m in self.seen
            if m.get("method") == "session/update" and m["params"]["sessionId"] == sid
        ]

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def finish(self) -> int:
        with contextlib.suppress(OSError):
            self.close_stdin()
        return self.proc.wait(timeout=LIVENESS_S)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=LIVENESS_S)
        with contextlib.suppress(OSError):
            self.close_stdin()


@pytest.fixture
def editors() -> Iterator[list[Editor]]:
    started: list[Editor] = []
    try:
        yield started
    finally:
        for editor in started:
            editor.kill()


def shape(value: Any) -> Any:
    """A message with its values replaced by their types (ids, titles, times vary)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items() if k != "_meta"}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return type(value).__name__


def prompt(editor: Editor, sid: str, text: str) -> int:
    return editor.request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    )


def tool_started(update: dict[str, Any]) -> bool:
    return update.get("sessionUpdate") == "tool_call_update" and update.get("status") in (
        "in_progress",
    )


def wait_update(editor: Editor, sid: str, predicate: Callable[[dict[str, Any]], bool]) -> None:
    editor.until(
        lambda m: (
            m.get("method") == "session/update"
            and m["params"]["sessionId"] == sid
            and predicate(m["params"]["update"])
        )
    )


def text_of(editor: Editor, sid: str) -> str:
    return "".join(
        u["content"]["text"]
        for u in editor.updates(sid)
        if u["sessionUpdate"] == "agent_message_chunk"
    )


def stored(place: Place, sid: str) -> str:
    shown = place.rawtrio("sessions", "export", "--format", "json", sid)
    assert shown.returncode == 0, shown.stderr
    return str(shown.stdout)


def test_attached_acp_answers_as_a_local_one(
    place: Place, host: HostProcess, editors: list[Editor]
) -> None:
    attached = Editor.start(place)
    local = Editor.start(place, "--no-attach")
    editors += [attached, local]
    answers = []
    for editor in (attached, local):
        init = editor.initialize()
        sid = editor.new_session(place.iso.cwd)
        rid = editor.request(
            "session/prompt",
            {"sessionId": sid, "prompt": [{"type": "text", "text": "use a tool"}]},
        )
        done = editor.answer_of(rid)
        assert done["result"] == {"stopReason": "end_turn"}, done
        answers.append((init, editor.updates(sid), done))
    (a_init, a_updates, a_done), (l_init, l_updates, l_done) = answers
    assert shape(a_init) == shape(l_init)
    assert a_init["result"]["_meta"]["rawtrio"]["pid"] == host.proc.pid
    assert "_meta" not in l_init["result"]
    assert [u["sessionUpdate"] for u in a_updates] == [u["sessionUpdate"] for u in l_updates]
    assert shape(a_updates) == shape(l_updates)
    assert a_done == {**l_done, "id": a_done["id"]}
    assert attached.finish() == 0
    assert local.finish() == 0
    assert "attached to the host (pid" in "".join(attached.stderr)
    # The attached session lives in the host's store, the same store as the local one.
    status = place.rawtrio("sessions", "list")
    assert status.returncode == 0, status.stderr


def test_tools_run_with_the_editors_environment_and_cwd(
    place: Place, host: HostProcess, editors: list[Editor]
) -> None:
    sub = place.iso.cwd / "sub"
    sub.mkdir()
    editor = Editor.start(place, MARK="from-the-editor")
    editors.append(editor)
    editor.initialize()
    sid = editor.new_session(sub)
    done = editor.answer_of(prompt(editor, sid, "who runs tools"))
    assert done["result"] == {"stopReason": "end_turn"}, done
    [finished] = [
        u
        for u in editor.updates(sid)
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"
    ]
    # The command's output, as JSON text: the editor's value, its cwd, and the process that
    # ran it: the host.
    expected = f"from-the-editor\n{sub}\nparent={host.proc.pid}\n"
    assert json.dumps(expected)[1:-1] in json.dumps(finished["content"])
    assert "MARK" not in psutil.Process(host.proc.pid).environ()
    assert editor.finish() == 0


def test_a_permission_request_reaches_the_editor_and_its_answer_the_host(
    place: Place, host: HostProcess, editors: list[Editor]
) -> None:
    editor = Editor.start(place, RAWTRIO_PERMISSION_MODE="default")
    editors.append(editor)
    editor.initialize()
    sid = editor.new_session(place.iso.cwd)
    rid = prompt(editor, sid, "use a tool")
    ask = editor.until(lambda m: m.get("method") == "session/request_permission")
    assert ask["params"]["sessionId"] == sid
    assert ask["params"]["toolCall"]["rawInput"] == {"command": "echo tool-output"}
    assert {o["optionId"] for o in ask["params"]["options"]} == {
        "allow_once",
        "allow_always",
        "deny",
    }
    editor.send(
        {
            "jsonrpc": "2.0",
            "id": ask["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}},
        }
    )
    done = editor.answer_of(rid)
    assert done["result"] == {"stopReason": "end_turn"}, done
    assert text_of(editor, sid) == "The tool said tool-output."
    assert "tool-output" in stored(place, sid)
    assert editor.finish() == 0


def test_session_cancel_through_the_relay_cancels_the_turn(
    place: Place, host: HostProcess, editors: list[Editor]
) -> None:
    editor = Editor.start(place)
    editors.append(editor)
    editor.initialize()
    sid = editor.new_session(place.iso.cwd)
    rid = prompt(editor, sid, "sleep a while")
    wait_update(editor, sid, tool_started)
    editor.notify("session/cancel", {"sessionId": sid})
    done = editor.answer_of(rid)
    assert done["result"] == {"stopReason": "cancelled"}, done
    [failed] = [
        u
        for u in editor.updates(sid)
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "failed"
    ]
    assert failed["rawOutput"]["status"] == "cancelled"
    assert editor.finish() == 0


def test_two_editors_on_one_session_see_each_others_turns(
    place: Place, host: HostProcess, editors: list[Editor]
) -> None:
    first, second = Editor.start(place), Editor.start(place)
    editors += [first, second]
    first.initialize()
    second.initialize()
    sid = first.new_session(place.iso.cwd)
    loaded = second.call(
        "session/load", {"sessionId": sid, "cwd": str(place.iso.cwd), "mcpServers": []}
    )
    assert "result" in loaded, loaded
    done = first.answer_of(prompt(first, sid, "use a tool"))
    assert done["result"] == {"stopReason": "end_turn"}
    second.until(lambda m: text_of(second, sid) == "The tool said tool-output.")
    assert text_of(second, sid) == "The tool said tool-output."
    # And the other way round: the second one prompts, the first one watches.
    done = second.answer_of(prompt(second, sid, "say hello"))
    assert done["result"] == {"stopReason": "end_turn"}
    first.until(lambda m: "Hello from the fake model." in text_of(first, sid))
    assert any(u["sessionUpdate"] == "user_message_chunk" for u in first.updates(sid))
    assert first.finish() == 0
    assert second.finish() == 0


def test_closing_stdin_mid_turn_leaves_the_turn_running_in_the_host(
    place: Place, host: HostProcess, editors: list[Editor]
) -> None:
    editor = Editor.start(place)
    editors.append(editor)
    editor.initialize()
    sid = editor.new_session(place.iso.cwd)
    prompt(editor, sid, "slow then done")
    wait_update(editor, sid, tool_started)
    assert editor.finish() == 0
    wait_for(lambda: "done after all" in stored(place, sid), "the turn ended in the host")
    assert '"completed"' in stored(place, sid)


def test_sigterm_cancels_this_editors_turn_and_exits_0(
    place: Place, host: HostProcess, editors: list[Editor]
) -> None:
    editor = Editor.start(place)
    editors.append(editor)
    editor.initialize()
    sid = editor.new_session(place.iso.cwd)
    prompt(editor, sid, "sleep a while")
    wait_update(editor, sid, tool_started)
    editor.proc.send_signal(signal.SIGTERM)
    assert editor.proc.wait(timeout=LIVENESS_S) == 0
    wait_for(lambda: "cancelled" in stored(place, sid), "the turn was recorded cancelled")


def test_the_host_going_away_ends_the_relay_with_exit_1(
    place: Place, host: HostProcess, editors: list[Editor]
) -> None:
    editor = Editor.start(place)
    editors.append(editor)
    editor.initialize()
    host.kill()
    assert editor.proc.wait(timeout=LIVENESS_S) == 1
    wait_for(lambda: any("went away" in line for line in editor.stderr), "the line on stderr")
    [line] = [line for line in editor.stderr if "went away" in line]
    assert f"the host (pid {host.proc.pid}) went away" in line


def test_a_too_large_frame_is_answered_as_the_local_agent_answers_it(
    place: Place, host: HostProcess, editors: list[Editor]
) -> None:
    answers = []
    for args in (("--max-message", "2048"), ("--max-message", "2048", "--no-attach")):
        editor = Editor.start(place, *args)
        editors.append(editor)
        editor.initialize()
        big = {"jsonrpc": "2.0", "id": 99, "method": "session/list", "params": {"x": "y" * 5000}}
        editor.send(big)
        refused = editor.until(lambda m: "error" in m)
        listed = editor.call("session/list", {})
        assert "result" in listed, listed
        answers.append(refused)
        assert editor.finish() == 0
    attached, local = answers
    assert attached == local
    assert attached["id"] is None
    assert attached["error"]["code"] == -32600
    assert "(the limit is 2048)" in attached["error"]["message"]


def test_a_host_of_another_version_is_left_alone(place: Place, editors: list[Editor]) -> None:
    with fake_host(place.paths.socket) as fake:
        editor = Editor.start(place)
        editors.append(editor)
        peer = fake.accept()
        peer.handshake(version="0.0.0-other")
        assert peer.read() is None  # the relay closed the probe: it runs here
        init = editor.initialize()
        assert "_meta" not in init["result"]
        sid = editor.new_session(place.iso.cwd)
        done = editor.answer_of(prompt(editor, sid, "say hello"))
        assert done["result"] == {"stopReason": "end_turn"}
        assert not fake.connected()
    assert editor.finish() == 0
    [line] = editor.stderr
    assert "the host (pid 4242) is rawtrio 0.0.0-other" in line
    assert line.rstrip().endswith("running here instead")


def test_ws_never_attaches(place: Place) -> None:
    done = place.rawtrio("acp", "--ws", "--attach")
    assert done.returncode == 2
    assert "--attach: rawtrio acp --ws is a listener itself" in done.stderr


def test_the_relay_imports_no_runtime_no_pydantic_no_sdk(place: Place, host: HostProcess) -> None:
    proc = subprocess.run(
        [*rawtrio_argv()[:1], "-X", "importtime", *rawtrio_argv("acp")[1:]],
        cwd=place.iso.cwd,
        env=place.env(),
        input=b"",
        capture_output=True,
        timeout=LIVENESS_S,
    )
    assert proc.returncode == 0, proc.stderr
    imported = {
        line.split("|")[-1].strip()
        for line in proc.stderr.decode().splitlines()
        if line.startswith("import time:")
    }
    assert "rawtrio.acp.relay" in imported
    heavy = {"trio", "pydantic", "anthropic", "openai", "httpx", "rawtrio.runtime", "rawtrio.app"}
    assert not heavy & imported, heavy & imported


def test_the_host_checks_the_context_and_takes_it_from_its_socket_only(
    place: Place, host: HostProcess
) -> None:
    from rawtrio.acp.agent import AcpConnection
    from rawtrio.acp.extensions import ClientContext, client_context
    from tests.host.support import Client

    client = Client.connect(place.paths.socket)
    try:
        client.initialize()
        for bad, why in (
            ({"env": {"X": 1}}, "_meta.rawtrio.env.X must be a string, got a number"),
            ({"flags": {"colour": "red"}}, "_meta.rawtrio.flags.colour: unknown flag"),
            ({"keys": {}}, "_meta.rawtrio.keys: unknown key"),
            ([], "_meta.rawtrio must be an object"),
        ):
            params = {"cwd": str(place.iso.cwd), "mcpServers": [], "_meta": {"rawtrio": bad}}
            answer = client.call("session/new", params)
            assert answer["error"]["code"] == -32602, answer
            assert why in answer["error"]["message"], answer
    finally:
        client.close()
    # A connection the host did not mark (WebSocket, or outside a host) ignores it.
    ext = SimpleNamespace(client_context=client_context)
    conn = AcpConnection(cast(Any, SimpleNamespace(extensions=ext)), "ws 1")
    meta = {"_meta": {"rawtrio": {"env": {"MARK": "x"}, "flags": {}}}}
    assert conn.client_context(meta) is None
    conn.accepts_client_context = True
    context = conn.client_context(meta)
    assert isinstance(context, ClientContext)
    assert context.env == {"MARK": "x"}


def test_the_acp_sdk_conformance_checks_pass_attached(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The official TypeScript SDK's stdio checks (tests/acp/conformance.mjs) against an
    attached `rawtrio acp`, with the ACP tests' scenario."""
    from tests.acp.conftest import SCENARIO as ACP_SCENARIO
    from tests.acp.test_conformance import MCP_SERVER, STDIO, _run_node, mcp_http_server
    from tests.headless.conftest import fake_model_process
    from tests.headless.support import Isolation
    from tests.host.support import short_runtime_dir

    with (
        fake_model_process(ACP_SCENARIO, tmp_path_factory.mktemp("acp-model")) as fake,
        short_runtime_dir() as runtime,
        mcp_http_server() as url,
    ):
        place = Place(Isolation(tmp_path), runtime, fake.base_url)
        host = HostProcess.start(place)
        try:
            host.wait_registered()
            argv = rawtrio_argv("acp", "--attach", "--sigterm-grace", "0.2")
            env = {
                "ACP_CMD": json.dumps(argv),
                "ACP_CWD": str(place.iso.cwd),
                "ACP_MCP_SERVER": json.dumps([sys.executable, str(MCP_SERVER)]),
                "ACP_MCP_HTTP_URL": url,
            }
            results = _run_node("stdio", place.env(env), place.iso.cwd)
        finally:
            host.proc.send_signal(signal.SIGTERM)
            host.wait_exit()
    assert "driver" not in results, results["driver"]["detail"]
    assert "attached to the host" in results["_stderr"]["detail"]
    failed = {name: results.get(name) for name in STDIO if not results.get(name, {}).get("ok")}
    assert not failed, failed
