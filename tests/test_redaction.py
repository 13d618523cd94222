"""One redactor for tools, hooks and variables: whole values, JSON-escaped forms, chunks."""

from __future__ import annotations

import io
import logging

import pytest

from rawtrio import events as ev
from rawtrio.contracts import ToolStatus
from rawtrio.frozen import freeze
from rawtrio.messages import AssistantMessage, ThinkingPart, ToolResult
from rawtrio.redaction import RedactingFilter, Redactor, StreamRedactor

SECRET = "sk-live-0123456789"


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 11, 64])
def test_stream_never_leaks_a_secret_split_across_chunks(size: int) -> None:
    red = Redactor()
    red.add("api_key", SECRET)
    text = f"key={SECRET}; again:{SECRET}!"
    seen: list[str] = []
    stream = StreamRedactor(red, seen.append)
    for i in range(0, len(text), size):
        stream(text[i : i + size])
    stream.flush()
    assert "".join(seen) == "key=[redacted:api_key]; again:[redacted:api_key]!"
    assert all("sk-live" not in chunk for chunk in seen)


def test_unnamed_values_short_values_and_json_escapes() -> None:
    red = Redactor(['pass"word"1', "abc"])
    assert red.redact('{"pw": "pass\\"word\\"1"}') == '{"pw": "[redacted]"}'
    assert red.redact("abc stays") == "abc stays"
    assert red.redact_json({"k": ['pass"word"1']})["k"] == ("[redacted]",)


def test_scrub_redacts_every_string_of_events_and_messages_and_keeps_types() -> None:
    red = Redactor()
    red.add("api_key", SECRET)
    event = ev.AssistantMessageCommitted(
        session_id="s",
        turn_id="t",
        step=1,
        text=f"it is {SECRET}",
        tool_calls=(("c1", "bash", freeze({"command": f"echo {SECRET}", "n": 3})),),
        stop_reason="tool_use",
    )
    clean = red.scrub(event)
    assert type(clean) is ev.AssistantMessageCommitted
    assert clean.text == "it is [redacted:api_key]"
    assert clean.tool_calls[0][2] == {"command": "echo [redacted:api_key]", "n": 3}
    untouched = ev.Notice(session_id="s", level="info", text="nothing secret")
    assert red.scrub(untouched) is untouched
    result = ToolResult("c1", "bash", ToolStatus.OK, f"out {SECRET}")
    scrubbed = red.scrub(result)
    assert scrubbed.status is ToolStatus.OK
    assert scrubbed.content == "out [redacted:api_key]"


def test_altered_thinking_loses_its_signature_and_untouched_thinking_keeps_it() -> None:
    red = Redactor([SECRET])
    msg = AssistantMessage(
        (
            ThinkingPart(f"secret {SECRET}", "sig", "anthropic"),
            ThinkingPart("fine", "sig2", "anthropic"),
        )
    )
    altered, kept = red.scrub(msg).parts
    assert altered == ThinkingPart("secret [redacted]", None, None)
    assert kept == ThinkingPart("fine", "sig2", "anthropic")


def test_the_log_filter_redacts_messages_arguments_and_tracebacks() -> None:
    red = Redactor()
    red.add("token", SECRET)
    log_filter = RedactingFilter()
    log_filter.watch(red)
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(log_filter)
    logger = logging.getLogger("tests.redaction")
    logger.addHandler(handler)
    try:
        logger.warning("value %s", SECRET)
        try:
            raise ValueError(f"bad {SECRET}")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    text = out.getvalue()
    assert SECRET not in text
    assert "value [redacted:token]" in text
    assert "ValueError: bad [redacted:token]" in text
