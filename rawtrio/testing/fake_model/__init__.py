"""A fake model server that speaks the providers' real wire formats, for tests and demos.

It answers Anthropic Messages (`/v1/messages`), OpenAI Chat Completions
(`/v1/chat/completions`) and OpenAI Responses (`/v1/responses`) on 127.0.0.1, streaming
server-sent events exactly as the services do, so the real `anthropic` and `openai` SDKs
run against it. Requests are validated the way the services validate them (tool call and
result pairing, roles, content) and refused with the services' error texts. Replies come
from a `Scenario`; see `docs/fake-model.md`::

    scenario = Scenario.from_dict({"rules": [{"match": "*", "replies": [{"text": "hi"}]}]})
    async with open_fake_model_server(scenario) as server:
        client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key="x")
"""

from __future__ import annotations

from rawtrio.testing.fake_model.scenario import (
    ErrorSpec,
    Reply,
    Rule,
    Scenario,
    ScenarioError,
    ToolCallSpec,
    UsageSpec,
)
from rawtrio.testing.fake_model.server import (
    FakeModelServer,
    RecordedRequest,
    open_fake_model_server,
)

__all__ = [
    "ErrorSpec",
    "FakeModelServer",
    "RecordedRequest",
    "Reply",
    "Rule",
    "Scenario",
    "ScenarioError",
    "ToolCallSpec",
    "UsageSpec",
    "open_fake_model_server",
]
