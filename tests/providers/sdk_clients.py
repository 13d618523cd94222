"""Which SDK clients exist: the garbage collector's view of the process, for tests that check
what a runtime or a `ClientPool` keeps alive (not a mock: the real client objects)."""

from __future__ import annotations

import gc

import anthropic
import openai

from rawtrio.testing.fake_model import FakeModelServer

SdkClient = anthropic.AsyncAnthropic | openai.AsyncOpenAI


def sdk_clients(server: FakeModelServer) -> list[SdkClient]:
    """Every SDK client alive in this process that points at `server`."""
    gc.collect()
    return [
        obj
        for obj in gc.get_objects()
        if isinstance(obj, SdkClient)
        and str(obj.base_url).startswith((server.base_url, server.openai_base_url))
    ]
