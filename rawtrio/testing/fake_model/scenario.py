"""Scripted replies: which reply a request gets, decided from the conversation it carries.

A scenario is a list of rules. The server finds the last user message with plain text in the
request, takes the first rule whose `match` fits that text, and counts the assistant turns
that follow it: that count is the step, and the reply is `rule.replies[step]`. Because the
choice depends only on the request, concurrent sessions and replays are served correctly
without any state in the server. The format is documented in `docs/fake-model.md`.

Scenarios come from test code or JSON files written by hand, so they are checked strictly:
an unknown key or a wrong type raises `ScenarioError` naming the place.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rawtrio.context.compaction import COMPACTION_MARKER

#: The reply a conversation gets once its rule has no more replies.
DONE_TEXT = "done"
#: A rule `match` that fits rawtrio's compaction (summary) requests only.
COMPACTION_MATCH = "@compaction"


class ScenarioError(ValueError):
    """A scenario dict or file does not follow the documented format."""


@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    name: str
    #: Arguments as an object; ignored when `raw_arguments` is set.
    arguments: dict[str, Any] = field(default_factory=dict)
    #: Arguments sent verbatim (may be malformed JSON on purpose).
    raw_arguments: str | None = None
    #: Call id; generated deterministically from the conversation when absent.
    id: str | None = None

    def arguments_json(self) -> str:
        if self.raw_arguments is not None:
            return self.raw_arguments
        return json.dumps(self.arguments, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    status: int
    #: The service's error type; a default per status and wire format when absent.
    type: str | None = None
    message: str | None = None
    #: Seconds, sent as the `retry-after` header.
    retry_after: float | None = None
    #: Milliseconds, sent as the `retry-after-ms` header (Anthropic and OpenAI both send it).
    retry_after_ms: float | None = None
    #: Send the error inside a 200 stream after this many events instead of as the status.
    after: int | None = None


@dataclass(frozen=True, slots=True)
class UsageSpec:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Reply:
    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()
    chunk: int = 8
    delay_ms: int = 0
    error: ErrorSpec | None = None
    cut_after: int | None = None
    malformed_after: int | None = None
    stall_after: int | None = None
    usage: UsageSpec = field(default_factory=UsageSpec)
    stop_reason: str | None = None
    #: Answer with the user text repeated this many times (after `text`), e.g. a
    #: "summary" larger than the conversation it was asked to summarize.
    echo: int = 0
    #: The reply's fault (error, cut, malformed event, stall) hits only the first N requests
    #: that pick this reply (counted per server); later ones get the reply without it.
    fail_times: int | None = None

    @property
    def has_fault(self) -> bool:
        return any(
            x is not None
            for x in (self.error, self.cut_after, self.malformed_after, self.stall_after)
        )

    def without_fault(self) -> Reply:
        return dataclasses.replace(
            self, error=None, cut_after=None, malformed_after=None, stall_after=None
        )

    @classmethod
    def from_dict(cls, data: object, where: str = "reply") -> Reply:
        d = _object(data, where, _REPLY_KEYS)
        calls = tuple(
            _tool_call(c, f"{where}.tool_calls[{i}]")
            for i, c in enumerate(_get(d, "tool_calls", list, where, []))
        )
        error = d.get("error")
        chunk = _get(d, "chunk", int, where, 8)
        if chunk < 1:
            raise ScenarioError(f"{where}.chunk: must be at least 1")
        fail_times = _get(d, "fail_times", int, where, None)
        if fail_times is not None and fail_times < 1:
            raise ScenarioError(f"{where}.fail_times: must be at least 1")
        return cls(
            text=_get(d, "text", str, where, ""),
            thinking=_get(d, "thinking", str, where, ""),
            tool_calls=calls,
            chunk=chunk,
            delay_ms=_get(d, "delay_ms", int, where, 0),
            error=None if error is None else _error(error, f"{where}.error"),
            cut_after=_get(d, "cut_after", int, where, None),
            malformed_after=_get(d, "malformed_after", int, where, None),
            stall_after=_get(d, "stall_after", int, where, None),
            usage=_usage(d.get("usage", {}), f"{where}.usage"),
            stop_reason=_get(d, "stop_reason", str, where, None),
            echo=_get(d, "echo", int, where, 0),
            fail_times=fail_times,
        )


@dataclass(frozen=True, slots=True)
class Rule:
    match: str
    replies: tuple[Reply, ...]

    def fits(self, text: str) -> bool:
        if self.match == "*":
            return True
        if self.match == COMPACTION_MATCH:
            return text.startswith(COMPACTION_MARKER)
        if self.match.startswith("re:"):
            return re.search(self.match[3:], text) is not None
        return self.match in text


@dataclass(frozen=True, slots=True)
class Scenario:
    rules: tuple[Rule, ...] = ()

    @classmethod
    def from_dict(cls, data: object) -> Scenario:
        """Build from `{"rules": [{"match": ..., "replies": [...]}, ...]}`."""
        d = _object(data, "scenario", {"rules"})
        rules = []
        for i, raw in enumerate(_get(d, "rules", list, "scenario", [])):
            where = f"rules[{i}]"
            r = _object(raw, where, {"match", "replies"})
            match = _get(r, "match", str, where, None)
            if match is None:
                raise ScenarioError(f"{where}.match: required")
            if match.startswith("re:"):
                try:
                    re.compile(match[3:])
                except re.error as exc:
                    raise ScenarioError(f"{where}.match: bad regex: {exc}") from None
            replies = tuple(
                Reply.from_dict(x, f"{where}.replies[{j}]")
                for j, x in enumerate(_get(r, "replies", list, where, []))
            )
            rules.append(Rule(match=match, replies=replies))
        return cls(rules=tuple(rules))

    @classmethod
    def from_file(cls, path: str | Path) -> Scenario:
        text = Path(path).read_text(encoding="utf-8")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScenarioError(f"{path}: not valid JSON: {exc}") from None
        return cls.from_dict(data)

    def pick(self, user_text: str | None, step: int) -> Reply:
        """The reply for the `step`-th assistant turn after the user message `user_text`."""
        if user_text is None:
            return Reply(text="fake-model: no user message")
        for rule in self.rules:
            if rule.fits(user_text):
                if step < len(rule.replies):
                    return rule.replies[step]
                return Reply(text=DONE_TEXT)
        return Reply(text=f"fake-model: no rule matched {user_text}")


# --- strict parsing helpers ------------------------------------------------------------

_REPLY_KEYS = {
    "text",
    "thinking",
    "tool_calls",
    "chunk",
    "delay_ms",
    "error",
    "cut_after",
    "malformed_after",
    "stall_after",
    "usage",
    "stop_reason",
    "echo",
    "fail_times",
}


def _object(data: object, where: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}: expected an object, got {type(data).__name__}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ScenarioError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
    return data


def _get(d: dict[str, Any], key: str, kind: type, where: str, default: Any) -> Any:
    value = d.get(key, default)
    if value is None or value is default:
        return value
    # bool is an int subclass; a flag is never a count here.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ScenarioError(f"{where}.{key}: expected {kind.__name__}, got {value!r}")
    return value


def _tool_call(data: object, where: str) -> ToolCallSpec:
    d = _object(data, where, {"id", "name", "arguments", "raw_arguments"})
    name = _get(d, "name", str, where, None)
    if name is None:
        raise ScenarioError(f"{where}.name: required")
    return ToolCallSpec(
        name=name,
        arguments=_get(d, "arguments", dict, where, {}),
        raw_arguments=_get(d, "raw_arguments", str, where, None),
        id=_get(d, "id", str, where, None),
    )


def _error(data: object, where: str) -> ErrorSpec:
    keys = {"status", "type", "message", "retry_after", "retry_after_ms", "after"}
    d = _object(data, where, keys)
    status = _get(d, "status", int, where, None)
    if status is None:
        raise ScenarioError(f"{where}.status: required")
    for key in ("retry_after", "retry_after_ms"):
        value = d.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ScenarioError(f"{where}.{key}: expected a number, got {value!r}")
    return ErrorSpec(
        status=status,
        type=_get(d, "type", str, where, None),
        message=_get(d, "message", str, where, None),
        retry_after=d.get("retry_after"),
        retry_after_ms=d.get("retry_after_ms"),
        after=_get(d, "after", int, where, None),
    )


def _usage(data: object, where: str) -> UsageSpec:
    keys = {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}
    d = _object(data, where, keys)
    return UsageSpec(
        input_tokens=_get(d, "input_tokens", int, where, None),
        output_tokens=_get(d, "output_tokens", int, where, None),
        cache_read_tokens=_get(d, "cache_read_tokens", int, where, 0),
        cache_write_tokens=_get(d, "cache_write_tokens", int, where, 0),
    )
