"""One live ACP session: the rawtrio `Session` plus the connections attached to it.

There is one `LiveSession` per session id in the process. Its *pump* task reads the
session's events (one subscription, resynced from the store if it ever lags, I8), turns
them into `session/update` payloads once, and queues them on every attached connection
without waiting (a connection that stops reading is cut off by its own bounded queue).

- A connection attaching with `session/load` first buffers live updates, is sent the
  replay of the display history, then the buffered updates newer than the replay: no
  gap, no duplicate, whatever runs meanwhile.
- Connections come and go; the session stays. A turn goes on when its prompter drops.
- Permission requests (`permission_requested`) are relayed as `session/request_permission`
  to the prompting connection, or another attached one. If that connection drops, the
  request is re-sent to the next one to attach; if none attaches within
  `permission_timeout_s`, the turn is cancelled. A `cancelled` outcome or an error answer
  (-32800 included) cancels the turn — never "denied, carry on".
- Prompts are serialised: a new `session/prompt` while one runs cancels the running turn,
  waits for its `cancelled` answer, then starts.
- *Watchers* (`_rawtrio/session/start`, docs/contracts.md) get every event itself, as
  `_rawtrio/event` notifications at full fidelity (`rawtrio.events.event_to_json`), from
  where they joined — or, with `since`, the stored events after it first, then the live
  ones: no gap, no duplicate. A watcher that cannot keep up is cut off by its
  connection's bounded queue; the pump never waits (I8). A watcher that *approves* (the
  attached terminal chat) answers `permission_requested` itself
  (`_rawtrio/session/answer_permission`): while one watches, a request with no ACP
  connection to relay it to waits for an answer instead of timing out; with one, the
  request goes to the editor as well, and the first answer wins (the other side's prompt
  closes on `permission_answered`).
- `on_unattended` (set by a host's agent) is called when the last connection left and
  when a turn ends with none attached: the agent then closes the session once it is idle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from rawtrio import events as ev
from rawtrio.acp.jsonrpc import ConnectionLost, Peer, RpcError
from rawtrio.acp.modes import config_options
from rawtrio.acp.updates import UpdateMapper, replay
from rawtrio.contracts import TurnOutcome
from rawtrio.events import event_to_json
from rawtrio.frozen import thaw
from rawtrio.groups import collapse_group
from rawtrio.permissions.approval import ApprovalDecision, ApprovalError
from rawtrio.runtime import Session

log = logging.getLogger(__name__)

#: How long a permission request waits for a connection to attach before the turn is cancelled.
DEFAULT_PERMISSION_TIMEOUT_S: Final = 300.0
#: Turn endings remembered for prompts that look them up late.
_REMEMBER_ENDED: Final = 64

PERMISSION_OPTIONS: Final = (
    {"optionId": "allow_once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Allow always (this session)", "kind": "allow_always"},
    {"optionId": "deny", "name": "Deny", "kind": "reject_once"},
)


@dataclass
class Attachment:
    peer: Peer
    #: The client's `fs` capabilities (`readTextFile`, `writeTextFile`).
    fs_read: bool = False
    fs_write: bool = False
    terminal: bool = False
    #: Live updates held back while a replay is being sent: (seq, updates).
    held: list[tuple[int, list[dict[str, Any]]]] | None = None


#: The notification that carries one event to a watcher (docs/contracts.md).
EVENT_METHOD: Final = "_rawtrio/event"


@dataclass
class Watcher:
    """A connection following the session's events at full fidelity."""

    peer: Peer
    #: The last sequence number it was sent (or that was before its join point).
    last: int
    #: Live events held back while the stored ones are being replayed.
    held: list[ev.Event] | None = None
    #: It answers permission requests (`_rawtrio/session/answer_permission`).
    approves: bool = False


@dataclass
class PromptState:
    peer: Peer
    turn_id: str | None = None
    cancel_requested: bool = False
    done: trio.Event = field(default_factory=trio.Event)


class LiveSession:
    def __init__(self, session: Session, *, permission_timeout_s: float) -> None:
        self.session = session
        self.id = session.id
        self.permission_timeout_s = permission_timeout_s
        self.mapper = UpdateMapper(session.cwd)
        self.attached: dict[int, Attachment] = {}
        self.prompt: PromptState | None = None
        self.title = session.record.title
        self._attached_signal = trio.Event()
        self._ended: dict[str, ev.TurnEnded] = {}
        self._ended_signal = trio.Event()
        self._relays: dict[str, trio.CancelScope] = {}
        self._turn_origin: dict[str, int] = {}
        self.pump_done = trio.Event()
        self._nursery: trio.Nursery | None = None
        self.watchers: dict[int, Watcher] = {}
        #: Called when no connection is left (after a detach, or at a turn's end).
        self.on_unattended: Callable[[LiveSession], None] | None = None
        # Subscribe now, with no checkpoint since the session was opened or created.
        self._sub = session.subscribe()

    # --- connections --------------------------------------------------------------------

    def attach(self, peer: Peer, caps: Attachment | None = None) -> None:
        """Attach `peer` (with the client capabilities in `caps`) for live updates."""
        if id(peer) not in self.attached:
            self.attached[id(peer)] = _attachment(peer, caps)
        self._signal_attach()

    async def attach_with_replay(
        self, peer: Peer, events: list[ev.Event], caps: Attachment | None = None
    ) -> None:
        """Attach `peer`, send it the display history `events`, then live updates."""
        att = _attachment(peer, caps)
        att.held = []
        self.attached[id(peer)] = att
        last = events[-1].seq if events else 0
        for update in replay(events, self.session.cwd):
            self._send(peer, update)
        # Live updates that arrived meanwhile; the history already had those up to `last`.
        assert att.held is not None
        for seq, updates in att.held:
            if seq > last:
                for update in updates:
                    self._send(peer, update)
        att.held = None
        self._signal_attach()

    def detach(self, peer: Peer) -> None:
        self.attached.pop(id(peer), None)
        if self.watchers.pop(id(peer), None) is not None:
            self._signal_attach()  # a relay waiting on an approving watcher looks again
        self._check_unattended()

    @property
    def approvers(self) -> bool:
        """A watcher that answers permission requests is here."""
        return any(w.approves and not w.peer.closed.is_set() for w in self.watchers.values())

    @property
    def unattended(self) -> bool:
        """No connection is attached or watching."""
        return not self.attached and not self.watchers

    def _check_unattended(self) -> None:
        if self.unattended and self.on_unattended is not None:
            self.on_unattended(self)

    async def watch(self, peer: Peer, since: int | None, *, approves: bool = False) -> None:
        """Send `peer` every event from now on (`since` None: from the join point) or,
        with `since`, the stored events with a larger `seq` first, then the live ones.
        `approves`: it answers permission requests."""
        if since is None:
            self.watchers[id(peer)] = Watcher(peer, self.session.recorder.seq, approves=approves)
            self._signal_attach()
            return
        watcher = Watcher(peer, since, held=[], approves=approves)
        self.watchers[id(peer)] = watcher
        self._signal_attach()
        try:
            for event in await self.session.events_since(since):
                self._to_watcher(watcher, event)
        except BaseException:
            self.watchers.pop(id(peer), None)
            raise
        finally:
            # The stored events were held too, behind live ones that arrived during the
            # read: in seq order, or those would be dropped as older than what was sent.
            held, watcher.held = watcher.held or [], None
            for event in sorted(held, key=lambda e: e.seq):
                self._to_watcher(watcher, event)

    def _to_watcher(
        self, watcher: Watcher, event: ev.Event, payload: dict[str, Any] | None = None
    ) -> None:
        if watcher.held is not None:
            watcher.held.append(event)
            return
        if event.seq <= watcher.last:
            return
        watcher.last = event.seq
        watcher.peer.notify(
            EVENT_METHOD, payload or {"sessionId": self.id, "event": event_to_json(event)}
        )

    def show_terminal(self, call_id: str, terminal_id: str) -> None:
        """A call's command runs in an editor terminal: show it in the tool call."""
        self.mapper.terminals[call_id] = terminal_id
        self.broadcast(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "content": [{"type": "terminal", "terminalId": terminal_id}],
            }
        )

    def _signal_attach(self) -> None:
        self._attached_signal.set()
        self._attached_signal = trio.Event()

    def _send(self, peer: Peer, update: dict[str, Any]) -> None:
        peer.notify("session/update", {"sessionId": self.id, "update": update})

    def broadcast(self, update: dict[str, Any]) -> None:
        for att in list(self.attached.values()):
            if att.held is None:
                self._send(att.peer, update)
            else:
                att.held.append((10**18, [update]))

    # --- the pump -----------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Fan the session's events out until it closes (owned by the agent's nursery)."""
        try:
            with collapse_group():
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    task_status.started()
                    await self._pump()
                    nursery.cancel_scope.cancel(reason="session closed")
        except Exception:  # the store failed while resyncing: prompts fall back to the session
            log.exception("session %s: updates stopped", self.id)
        finally:
            self.pump_done.set()
            self._ended_signal.set()

    async def _pump(self) -> None:
        sub = self._sub
        last = 0
        while True:
            with sub:
                async for event in sub:
                    if event.seq > last:
                        last = event.seq
                        self._fan(event)
            if not sub.lagged or self.session.closed:
                return
            # Cut off for lagging: subscribe again first, then fill the gap from the store.
            sub = self.session.subscribe()
            for event in await self.session.events_since(last):
                if event.seq > last:
                    last = event.seq
                    self._fan(event)

    def _fan(self, event: ev.Event) -> None:
        # Exception-group policy: nothing a single event does may take the pump (and with
        # it the agent's nursery) down; a bug is logged and that event's updates skipped.
        try:
            self._fan_out(event)
        except Exception:
            log.exception("session %s: could not forward %s", self.id, event.type)

    def _fan_out(self, event: ev.Event) -> None:
        if self.watchers:
            payload = {"sessionId": self.id, "event": event_to_json(event)}  # once per event
            for watcher in list(self.watchers.values()):
                self._to_watcher(watcher, event, payload)
        updates = self.mapper.updates(event)
        if isinstance(event, ev.ModeChanged | ev.ModelChanged):
            options = config_options(self.session)
            updates.append({"sessionUpdate": "config_option_update", "configOptions": options})
        origin = self._turn_origin.get(event.turn_id or "")
        for key, att in list(self.attached.items()):
            mine = updates
            if isinstance(event, ev.UserMessageCommitted) and key == origin:
                mine = []  # the prompter shows its own message
            if att.held is not None:
                att.held.append((event.seq, mine))
            else:
                for update in mine:
                    self._send(att.peer, update)
        if isinstance(event, ev.PermissionRequested) and self._nursery is not None:
            scope = trio.CancelScope()
            self._relays[event.request_id] = scope
            self._nursery.start_soon(self._relay, event, scope)
        elif isinstance(event, ev.PermissionAnswered):
            relay = self._relays.pop(event.request_id, None)
            if relay is not None:
                relay.cancel(reason="answered")
        elif isinstance(event, ev.TurnEnded) and event.turn_id is not None:
            self._ended[event.turn_id] = event
            self._turn_origin.pop(event.turn_id, None)
            while len(self._ended) > _REMEMBER_ENDED:
                self._ended.pop(next(iter(self._ended)))
            self._ended_signal.set()
            self._ended_signal = trio.Event()
            self._check_unattended()

    async def wait_ended(self, turn_id: str) -> ev.TurnEnded:
        """The turn's terminal event, once its updates were queued on every connection."""
        while turn_id not in self._ended:
            if self.pump_done.is_set():
                return await self.session.wait_turn(turn_id)
            await self._ended_signal.wait()
        return self._ended[turn_id]

    # --- permissions --------------------------------------------------------------------

    def client_with(self, *capabilities: str) -> Attachment | None:
        """An attached connection whose client offers one of `capabilities` (attribute
        names of `Attachment`: fs_read, fs_write, terminal), the prompter's first."""
        prefer = self._turn_origin.get(self.session.running_turn or "")
        able = {
            k: a
            for k, a in self.attached.items()
            if any(getattr(a, c) for c in capabilities) and not a.peer.closed.is_set()
        }
        att = able.get(prefer) if prefer is not None else None
        return att or next(iter(able.values()), None)

    def _target(self, prefer: int | None) -> Peer | None:
        live = {
            k: a for k, a in self.attached.items() if a.held is None and not a.peer.closed.is_set()
        }
        if prefer in live:
            return live[prefer].peer
        return next(reversed(live.values())).peer if live else None

    async def _relay(self, req: ev.PermissionRequested, scope: trio.CancelScope) -> None:
        try:
            await self._relay_request(req, scope)
        except Exception as exc:  # nobody can answer it now: the turn cannot go on
            log.exception("session %s: permission relay failed", self.id)
            self.session.cancel(f"the permission request could not be relayed: {exc!r}")

    async def _relay_request(self, req: ev.PermissionRequested, scope: trio.CancelScope) -> None:
        params = {
            "sessionId": self.id,
            "toolCall": {
                "toolCallId": req.call_id,
                "title": req.summary or req.tool_id,
                "rawInput": thaw(req.arguments),
                "status": "pending",
            },
            "options": [dict(o) for o in PERMISSION_OPTIONS],
        }
        with scope:
            try:
                while True:
                    peer = self._target(self._turn_origin.get(req.turn_id or ""))
                    if peer is None:
                        signal = self._attached_signal
                        if self.approvers:  # a chat answers it: wait as a local chat waits
                            await signal.wait()
                            continue
                        with trio.move_on_after(self.permission_timeout_s):
                            await signal.wait()
                            continue
                        self.session.cancel(
                            "no client attached to answer a permission request within "
                            f"{self.permission_timeout_s:g} s"
                        )
                        return
                    try:
                        answer = await peer.request("session/request_permission", params)
                    except ConnectionLost:
                        continue  # re-sent to the next connection attached
                    except RpcError as exc:
                        self.session.cancel(
                            f"the client answered the permission request with an error: {exc}"
                        )
                        return
                    self._apply(req, answer)
                    return
            finally:
                self._relays.pop(req.request_id, None)

    def _apply(self, req: ev.PermissionRequested, answer: Any) -> None:
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        kind = outcome.get("outcome") if isinstance(outcome, dict) else None
        option = outcome.get("optionId") if isinstance(outcome, dict) else None
        if kind == "selected" and option in ("allow_once", "allow_always", "deny"):
            by = "acp"
            decision = {
                "allow_once": ApprovalDecision.allow_once(by),
                "allow_always": ApprovalDecision.allow_always(by=by),
                "deny": ApprovalDecision.deny(by=by),
            }[option]
            try:
                self.session.answer_permission(req.request_id, decision)
            except ApprovalError as exc:  # answered elsewhere first, or the turn ended
                log.info("permission answer not applied: %s", exc)
            return
        why = "cancelled" if kind == "cancelled" else f"unusable answer {answer!r}"
        self.session.cancel(f"permission request {why} by the client")

    # --- prompts ------------------------------------------------------------------------

    def origin(self, turn_id: str, peer: Peer) -> None:
        self._turn_origin[turn_id] = id(peer)

    def cancel(self, reason: str) -> None:
        """`session/cancel`: the running prompt (if any) answers `cancelled`."""
        if self.prompt is not None:
            self.prompt.cancel_requested = True
        self.session.cancel(reason)


def _attachment(peer: Peer, caps: Attachment | None) -> Attachment:
    if caps is None:
        return Attachment(peer)
    return Attachment(peer, caps.fs_read, caps.fs_write, caps.terminal)


def stop_reason(ended: ev.TurnEnded, cancel_requested: bool) -> str:
    """The ACP stop reason; a turn the client cancelled always answers `cancelled`."""
    if cancel_requested or ended.outcome is TurnOutcome.CANCELLED:
        return "cancelled"
    if ended.outcome is TurnOutcome.MAX_STEPS:
        return "max_turn_requests"
    return "end_turn"
