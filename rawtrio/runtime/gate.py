"""What stands between a validated tool call and its handler: hooks and permissions.

`admit` decides whether a call may start — PreToolUse hooks, then the permission policy,
then (for `ask`) PermissionRequest hooks and the user's answer through the host's
`ApprovalBroker`, first answer from any front end wins. It returns the call's `denied`
result, or None to go ahead. A cancellation while waiting for an answer resolves the
request as cancelled (`permission_answered` with decision `cancelled`) and propagates:
the call then gets its `cancelled`, not-started result like any unstarted call (I4).

`after` runs PostToolUse / PostToolUseFailure hooks on a finished call and appends what
they say for the model to the result.

Claude Code hooks (dialect `claude-code`) may also answer `allow` / `ask`, which the policy
weighs (`PermissionPolicy.evaluate(hook=...)`), and `continue: false`, which sets
`turn.halt_reason`: the loop ends the turn after this call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import trio

from rawtrio import events as ev
from rawtrio.contracts import DeniedBy, ToolStatus
from rawtrio.frozen import freeze
from rawtrio.hooks import HookEvent, HookOutcome, payloads
from rawtrio.messages import ToolCall, ToolResult
from rawtrio.permissions.approval import AlwaysScope, ApprovalKind, ApprovalRequest
from rawtrio.permissions.policy import allow_rule_for
from rawtrio.permissions.rules import Effect
from rawtrio.permissions.summary import summarize_call
from rawtrio.tools.base import Tool, ToolOutput

if TYPE_CHECKING:
    from rawtrio.runtime.host import TurnHost
    from rawtrio.runtime.turn import Turn


async def admit(
    host: TurnHost, turn: Turn, call: ToolCall, tool: Tool, args: Mapping[str, Any]
) -> tuple[ToolResult | None, str | None]:
    """(None, hook context) when the call may start; otherwise (its `denied` result, None)."""
    frozen_args = freeze(dict(args))
    pre = await host.run_hooks(
        HookEvent.PRE_TOOL_USE, payloads.pre_tool_use(tool.id, frozen_args, call.id)
    )
    halt(turn, pre)
    if pre.stopped:
        return denied(call, DeniedBy.HOOK, f"denied by a PreToolUse hook: {pre.reason}"), None
    # Judged per call where the tool declares it so (`task`: by its agent), as for groups.
    read_only = tool.read_only if tool.read_only_for is None else tool.read_only_for(args)
    decision = host.policy.evaluate(tool.id, args, read_only=read_only, hook=pre.permission)
    if decision.effect is Effect.DENY:
        return denied(call, decision.denied_by or DeniedBy.RULE, decision.reason), None
    if decision.effect is Effect.ASK:
        hook = await host.run_hooks(
            HookEvent.PERMISSION_REQUEST,
            payloads.permission_request(tool.id, frozen_args, call.id),
        )
        halt(turn, hook)
        if hook.stopped:
            reason = f"denied by a PermissionRequest hook: {hook.reason}"
            return denied(call, DeniedBy.HOOK, reason), None
        refusal = await ask_user(host, turn, call, tool, args)
        if refusal is not None:
            return refusal, None
    return None, pre.context_text()


async def ask_user(
    host: TurnHost, turn: Turn, call: ToolCall, tool: Tool, args: Mapping[str, Any]
) -> ToolResult | None:
    redact = host.recorder.redactor.redact
    summary = summarize_call(tool.id, args, key_argument=tool.key_argument, redact=redact)
    asked: list[ApprovalRequest] = []

    def announce(request: ApprovalRequest) -> None:
        asked.append(request)
        host.recorder.emit(
            ev.PermissionRequested(
                session_id=host.id,
                turn_id=turn.id,
                request_id=request.request_id,
                call_id=call.id,
                tool_id=tool.id,
                arguments=host.recorder.redactor.redact_json(request.arguments),
                summary=summary,
                options=request.options,
            )
        )

    try:
        answer = await host.approvals.request(
            call_id=call.id, tool_id=tool.id, summary=summary, arguments=args, announce=announce
        )
    except trio.Cancelled:
        if asked:
            host.recorder.emit(answered(host, turn, asked[0], call, "cancelled"))
        raise
    host.recorder.emit(answered(host, turn, asked[0], call, answer.kind.value))
    if answer.kind is ApprovalKind.ALLOW_ALWAYS:
        rule = allow_rule_for(tool.id, args, tool.key_argument, origin="allowed by the user")
        host.policy.allow_for_session(rule)
        if answer.scope is AlwaysScope.PROJECT and host.options.save_allow_rule is not None:
            host.options.save_allow_rule(rule)
    if answer.allowed:
        return None
    note = f": {answer.message}" if answer.message else ""
    return denied(call, DeniedBy.USER, f"denied by the user{note}")


async def after(
    host: TurnHost,
    turn: Turn,
    call: ToolCall,
    tool: Tool,
    output: ToolOutput,
    pre_context: str | None,
) -> ToolOutput:
    """PostToolUse hooks; what they tell the model is appended to the result."""
    args = call.arguments if call.arguments is not None else freeze({})
    if output.status is ToolStatus.OK:
        event = HookEvent.POST_TOOL_USE
        payload = payloads.post_tool_use(
            tool.id,
            args,
            call.id,
            status=output.status.value,
            content=output.content,
            details=output.details,
        )
    else:
        event = HookEvent.POST_TOOL_USE_FAILURE
        payload = payloads.post_tool_use_failure(
            tool.id, args, call.id, status=output.status.value, error=output.content
        )
    post = await host.run_hooks(event, payload)
    halt(turn, post)
    extra = [f"[hook feedback] {post.reason}"] if post.stopped else []
    extra += [t for t in (pre_context, post.context_text()) if t]
    if not extra:
        return output
    return ToolOutput(output.status, "\n\n".join([output.content, *extra]), output.details)


def halt(turn: Turn, outcome: HookOutcome) -> None:
    """A Claude Code hook's `continue: false`: the turn ends after this call."""
    if outcome.halted and turn.halt_reason is None:
        turn.halt_reason = outcome.halt_reason or f"{outcome.event} hook: continue: false"


def answered(
    host: TurnHost, turn: Turn, request: ApprovalRequest, call: ToolCall, decision: str
) -> ev.PermissionAnswered:
    return ev.PermissionAnswered(
        session_id=host.id,
        turn_id=turn.id,
        request_id=request.request_id,
        call_id=call.id,
        decision=decision,
    )


def denied(call: ToolCall, by: DeniedBy, reason: str) -> ToolResult:
    return ToolResult(call.id, call.name, ToolStatus.DENIED, reason, started=False, denied_by=by)
