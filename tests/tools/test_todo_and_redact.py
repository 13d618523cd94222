from __future__ import annotations

from typing import Any

from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from rawtrio.redaction import Redactor, StreamRedactor
from rawtrio.tools.bash import bash_tool
from rawtrio.tools.settings import ToolSettings
from rawtrio.tools.todo import Plan, TodoItem, TodoStatus, plan_from_json, plan_to_json
from rawtrio.tools.todo_tools import todo_read_tool, todo_write_tool
from tests.tools.conftest import MakeCtx

SECRET = "sk-very-secret-value-123"


async def test_todo_write_replaces_persists_and_reads_back(make_ctx: MakeCtx) -> None:
    stored: list[Any] = []

    async def on_change(items: tuple[TodoItem, ...]) -> None:
        stored.append(plan_to_json(items))

    ctx = make_ctx(plan=Plan(on_change=on_change))
    todos = [
        {"content": "write tests", "status": "completed"},
        {"content": "fix bug", "status": "in_progress"},
    ]
    out = await todo_write_tool().handler(ctx, freeze({"todos": todos}))
    assert out.content == "[x] 1. write tests\n[~] 2. fix bug\n[1 of 2 completed]"
    assert stored[-1][1] == {"id": "2", "content": "fix bug", "status": "in_progress"}
    read = await todo_read_tool().handler(ctx, freeze({}))
    assert read.content == out.content
    assert plan_from_json(stored[-1])[1].status is TodoStatus.IN_PROGRESS


async def test_todo_without_a_plan_holder_is_an_error(make_ctx: MakeCtx) -> None:
    out = await todo_read_tool().handler(make_ctx(), freeze({}))
    assert out.status is ToolStatus.ERROR


def test_plan_from_bad_json_is_empty() -> None:
    assert plan_from_json(None) == ()
    assert plan_from_json([{"id": 1}]) == ()


def test_stream_redactor_catches_secrets_split_across_chunks() -> None:
    seen: list[str] = []
    stream = StreamRedactor(Redactor([SECRET]), seen.append)
    text = f"key={SECRET} and again {SECRET}!"
    for i in range(0, len(text), 5):
        stream(text[i : i + 5])
    stream.flush()
    assert "".join(seen) == "key=[redacted] and again [redacted]!"


async def test_bash_never_shows_secret_values(make_ctx: MakeCtx) -> None:
    settings = ToolSettings(output_cap=4000, sigterm_grace_s=0.2, redactor=Redactor([SECRET]))
    live: list[str] = []
    ctx = make_ctx(settings=settings, emit_output=live.append, env={"PATH": "/usr/bin:/bin"})
    out = await bash_tool().handler(ctx, freeze({"command": f"echo {SECRET}"}))
    assert SECRET not in out.content
    assert "[redacted]" in out.content
    assert SECRET not in "".join(live)


async def test_api_keys_are_stripped_by_default(make_ctx: MakeCtx) -> None:
    env = {"PATH": "/usr/bin:/bin", "MY_SERVICE_API_KEY": "k", "KEEP": "v"}
    out = await bash_tool().handler(
        make_ctx(env=env), freeze({"command": 'echo "${MY_SERVICE_API_KEY:-gone}:$KEEP"'})
    )
    assert out.content.startswith("gone:v\n")
