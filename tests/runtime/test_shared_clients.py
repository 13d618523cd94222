"""Sessions borrow the runtime's SDK clients (issue: RSS grew ~70 kB per closed session, each
having built and dropped its own client and TLS context). The figure over 1,000 sessions is
in stress/bench/bench_memory.py; these tests check what is reachable, never timings."""

from __future__ import annotations

import dataclasses
import weakref
from pathlib import Path

import trio

from rawtrio.contracts import TurnOutcome
from rawtrio.messages import ProviderKind
from rawtrio.runtime.runtime import open_runtime
from rawtrio.runtime.session import Session, SessionOptions
from rawtrio.store.memory import MemoryStore
from rawtrio.testing.fake_model import Scenario, open_fake_model_server
from tests.conftest import LIVENESS_S, provider_for
from tests.providers.sdk_clients import sdk_clients

SCENARIO = {
    "rules": [
        {"match": "re:^slow$", "replies": [{"text": "one two", "chunk": 2, "stall_after": 2}]},
        {"match": "*", "replies": [{"text": "ok"}]},
    ]
}


async def test_sessions_on_one_endpoint_share_one_client_and_leave_nothing_behind(
    tmp_path: Path, wire: ProviderKind
) -> None:
    gone: list[weakref.ref[Session]] = []
    async with (
        open_fake_model_server(Scenario.from_dict(SCENARIO)) as server,
        open_runtime(MemoryStore(), retention_days=0) as runtime,
    ):
        options = SessionOptions(cwd=tmp_path, provider=provider_for(server, wire))
        with trio.fail_after(LIVENESS_S):
            together = [await runtime.create_session(options) for _ in range(3)]
            assert len(sdk_clients(server)) == 1  # three open sessions, one client
            for session in together:
                assert (await session.run_turn("hello")).outcome is TurnOutcome.COMPLETED
                await session.close()
                gone.append(weakref.ref(session))
            for _ in range(5):
                session = await runtime.create_session(options)
                assert (await session.run_turn("hello")).outcome is TurnOutcome.COMPLETED
                await session.close()
                gone.append(weakref.ref(session))
            del session, together
        (client,) = sdk_clients(server)
        assert not client.is_closed()  # kept for the next session
        assert len(runtime.clients) == 1
        assert [r() for r in gone] == [None] * 8  # nothing holds a closed session
        # One client, one kept-alive connection: no TCP (or TLS) setup per session.
        assert len({r.connection for r in server.requests}) == 1
    assert client.is_closed()  # the runtime closed its clients as it closed


async def test_the_shared_client_survives_a_session_closing_while_another_streams(
    tmp_path: Path, wire: ProviderKind
) -> None:
    async with (
        open_fake_model_server(Scenario.from_dict(SCENARIO)) as server,
        open_runtime(MemoryStore(), retention_days=0) as runtime,
    ):
        options = SessionOptions(cwd=tmp_path, provider=provider_for(server, wire))
        with trio.fail_after(LIVENESS_S):
            streaming = await runtime.create_session(options)
            slow = await streaming.submit("slow")
            await server.wait_for(lambda s: any(r.events_sent >= 2 for r in s.requests))
            held = server.requests[-1]
            # Mid-stream (the reply stalls), a second session streams through the same
            # client on a second connection, finishes, and closes.
            other = await runtime.create_session(options)
            assert (await other.run_turn("hello")).outcome is TurnOutcome.COMPLETED
            assert server.requests[-1].connection != held.connection
            await other.close()
            assert len(sdk_clients(server)) == 1
            assert not held.disconnected  # the first stream's connection is still open
            streaming.cancel("test over")
            assert (await streaming.wait_turn(slow)).outcome is TurnOutcome.CANCELLED
            again = await streaming.run_turn("hello")
            assert again.outcome is TurnOutcome.COMPLETED


async def test_sessions_with_different_keys_never_share_a_client(tmp_path: Path) -> None:
    async with (
        open_fake_model_server(Scenario.from_dict(SCENARIO)) as server,
        open_runtime(MemoryStore(), retention_days=0) as runtime,
    ):
        base = provider_for(server, "anthropic")
        with trio.fail_after(LIVENESS_S):
            for key in ("key-one", "key-two", "key-one"):
                options = SessionOptions(
                    cwd=tmp_path, provider=dataclasses.replace(base, api_key=key)
                )
                session = await runtime.create_session(options)
                await session.run_turn("hello")
                await session.close()
        sent = [r.headers["authorization"] for r in server.requests]
        assert sent == ["Bearer key-one", "Bearer key-two", "Bearer key-one"]
        assert len(runtime.clients) == 2


async def test_switching_models_returns_the_loan_and_never_closes_a_shared_client(
    tmp_path: Path,
) -> None:
    async def options_for_model(name: str) -> SessionOptions:
        key = "key-one" if name == "first" else "key-two"
        provider = dataclasses.replace(base, model=f"{name}-id", api_key=key)
        return dataclasses.replace(options, provider=provider, model_name=name)

    async with (
        open_fake_model_server(Scenario.from_dict(SCENARIO)) as server,
        open_runtime(MemoryStore(), retention_days=0) as runtime,
    ):
        base = dataclasses.replace(provider_for(server, "anthropic"), api_key="key-one")
        options = SessionOptions(
            cwd=tmp_path,
            provider=base,
            model_name="first",
            model_names=("first", "second"),
            options_for_model=options_for_model,
        )
        with trio.fail_after(LIVENESS_S):
            switching = await runtime.create_session(options)
            staying = await runtime.create_session(options)
            await switching.set_model("second")  # another key: another client
            await switching.run_turn("hello")
            await switching.set_model("first")  # back to the client `staying` borrows
            await switching.run_turn("hello")
            await switching.close()
            assert (await staying.run_turn("hello")).outcome is TurnOutcome.COMPLETED
        clients = sdk_clients(server)
        assert len(clients) == 2
        assert not any(c.is_closed() for c in clients)
        sent = [(r.headers["authorization"], r.body["model"]) for r in server.requests]
        assert sent == [
            ("Bearer key-two", "second-id"),
            ("Bearer key-one", "first-id"),
            ("Bearer key-one", "test-model"),
        ]
