"""`Session.set_model`: switching configured models between turns, through the real SDKs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import trio

from rawtrio import events as ev
from rawtrio.contracts import TurnOutcome
from rawtrio.errors import TurnInProgress, UsageError
from rawtrio.messages import check_pairing
from rawtrio.runtime.session import SessionOptions
from tests.conftest import session_on

SCENARIO = {
    "rules": [
        {"match": "slow", "replies": [{"text": "one two three four", "chunk": 2, "delay_ms": 200}]},
        {"match": "*", "replies": [{"text": "ok"}]},
    ]
}


async def test_set_model_switches_the_next_request_and_is_announced(tmp_path: Path) -> None:
    derived: list[str] = []

    async def options_for_model(name: str) -> SessionOptions:
        derived.append(name)
        base = session.options
        provider = dataclasses.replace(base.provider, model=f"{name}-id")
        return dataclasses.replace(base, provider=provider, model_name=name)

    async with session_on(
        SCENARIO,
        "anthropic",
        tmp_path,
        model_name="first",
        model_names=("first", "second"),
        options_for_model=options_for_model,
    ) as (session, server, _runtime):
        assert session.model_name == "first"
        await session.run_turn("hello")
        assert server.requests[-1].body["model"] == "test-model"
        with session.subscribe() as sub:
            await session.set_model("second")
            changed = await sub.receive()
        assert isinstance(changed, ev.ModelChanged)
        assert (changed.model, changed.model_id, changed.provider) == (
            "second",
            "second-id",
            "anthropic",
        )
        assert session.model_name == "second"
        ended = await session.run_turn("hello again")
        assert ended.outcome is TurnOutcome.COMPLETED
        assert server.requests[-1].body["model"] == "second-id"
        assert check_pairing(session.context) == []

        with pytest.raises(UsageError, match="unknown model 'third'; configured models: first"):
            await session.set_model("third")
        turn = await session.submit("slow")
        with pytest.raises(TurnInProgress):
            await session.set_model("first")
        await session.wait_turn(turn)
        assert session.model_name == "second"
        assert derived == ["second"]


async def test_a_session_without_configured_models_refuses_clearly(tmp_path: Path) -> None:
    async with session_on(SCENARIO, "openai-chat", tmp_path) as (session, _server, _rt):
        assert session.model_name == "test-model"
        assert session.model_names == ()
        with trio.fail_after(10), pytest.raises(UsageError, match="configured models: none"):
            await session.set_model("anything")
