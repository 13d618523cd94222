// The transcript fold in the browser: the same fold as rawtrio/runtime/view.py
// (docs/contracts.md, "Transcript view"), over the events the API sends (their JSON form,
// `{"seq", "type", ...}`). It is pure: the same for a history page and for the live stream,
// so a reload shows what the live page showed. Items are plain objects replaced on each
// change (never mutated), so the renderer redraws only the items an event touched.

export class Transcript {
  constructor() {
    /** key → item, in the order items first appeared */
    this.items = new Map();
    this.openTools = new Set();
    this.compaction = null;
    /** the newest seq folded in (replayed events at or below it are ignored) */
    this.lastSeq = -1;
    this.usage = null;
    this.model = null;
    this.mode = null;
    /** turn running: from user_message to turn_ended */
    this.running = false;
    this.version = 0;
  }

  /** Fold events in order; returns this transcript. Duplicates (seq ≤ lastSeq) are skipped. */
  applyAll(events) {
    for (const e of events) this.apply(e);
    return this;
  }

  apply(e) {
    if (typeof e.seq === "number") {
      if (e.seq <= this.lastSeq) return false;
      this.lastSeq = e.seq;
    }
    const handler = HANDLERS[e.type];
    if (!handler) return false;
    handler(this, e);
    this.version += 1;
    return true;
  }

  list() {
    return Array.from(this.items.values());
  }

  put(item) {
    this.items.set(item.key, item);
  }

  tool(callId, name, turnId) {
    const key = `tool/${callId}`;
    const old = this.items.get(key);
    if (old) return old;
    this.openTools.add(key);
    return {
      kind: "tool", key, callId, turnId, name, toolId: name, phase: "announced",
      arguments: null, committed: false, permission: null, decision: null, output: "",
      status: null, content: "", started: false, deniedBy: null, details: {},
      startedAt: null, endedAt: null, diff: null,
    };
  }

  settleMessage(turnId, step, text, cut, committed) {
    const key = `message/${turnId}/${step}`;
    const old = this.items.get(key);
    this.put({
      kind: "message", key, turnId, step,
      text: text ?? (old ? old.text : ""),
      final: true, cut: cut ?? null,
      committed: committed || (old ? old.committed : false),
    });
  }
}

function diffOf(toolId, args) {
  if (!args || typeof args !== "object") return null;
  const path = args.path ?? args.file_path;
  if (typeof path !== "string") return null;
  if (toolId === "write_file" && typeof args.content === "string") {
    return { path, oldText: null, newText: args.content };
  }
  if (toolId === "edit_file") {
    const oldText = args.old_string ?? args.old_text;
    const newText = args.new_string ?? args.new_text;
    if (typeof oldText === "string" && typeof newText === "string") return { path, oldText, newText };
  }
  return null;
}

const HANDLERS = {
  user_message(t, e) {
    t.running = true;
    t.put({ kind: "user", key: `user/${e.seq}`, turnId: e.turn_id, text: e.text, note: e.note ?? null });
  },
  text_delta(t, e) {
    const key = `message/${e.turn_id}/${e.step}`;
    const old = t.items.get(key);
    t.put(old
      ? { ...old, text: old.text + e.text }
      : { kind: "message", key, turnId: e.turn_id, step: e.step, text: e.text, final: false, cut: null, committed: false });
  },
  thinking_delta(t, e) {
    const key = `thinking/${e.turn_id}/${e.step}`;
    const old = t.items.get(key);
    t.put({ kind: "thinking", key, turnId: e.turn_id, step: e.step, text: (old ? old.text : "") + e.text });
  },
  tool_call_announced(t, e) {
    t.put(t.tool(e.call_id, e.name, e.turn_id));
  },
  assistant_message(t, e) {
    const key = `message/${e.turn_id}/${e.step}`;
    if (e.text || t.items.has(key)) t.settleMessage(e.turn_id, e.step, e.text, null, true);
    for (const [callId, name, args] of e.tool_calls || []) {
      t.put({ ...t.tool(callId, name, e.turn_id), arguments: args, committed: true });
    }
  },
  stream_interrupted(t, e) {
    t.settleMessage(e.turn_id, e.step, e.partial_text, e.reason, false);
    for (const key of Array.from(t.openTools)) {
      const tool = t.items.get(key);
      if (tool && !tool.committed) {
        t.items.delete(key);
        t.openTools.delete(key);
      }
    }
  },
  tool_call_started(t, e) {
    const tool = t.tool(e.call_id, e.name, e.turn_id);
    t.put({
      ...tool, phase: "running", toolId: e.tool_id,
      arguments: e.arguments && typeof e.arguments === "object" ? e.arguments : {},
      startedAt: e.ts, permission: null,
    });
  },
  tool_output_delta(t, e) {
    const tool = t.tool(e.call_id, "tool", e.turn_id);
    t.put({ ...tool, output: tool.output + e.text, phase: tool.phase === "finished" ? "finished" : "running" });
  },
  tool_call_finished(t, e) {
    const tool = t.tool(e.call_id, e.name, e.turn_id);
    t.openTools.delete(tool.key);
    t.put({
      ...tool, phase: "finished", status: e.status, content: e.content, started: e.started,
      deniedBy: e.denied_by ?? null, details: e.details ?? {},
      endedAt: tool.startedAt !== null ? e.ts : null, permission: null,
      diff: e.status === "ok" ? diffOf(tool.toolId, tool.arguments) : null,
    });
  },
  permission_requested(t, e) {
    const tool = t.tool(e.call_id, e.tool_id, e.turn_id);
    t.put({
      ...tool, phase: "awaiting_approval", toolId: e.tool_id,
      arguments: tool.arguments ?? e.arguments,
      permission: { requestId: e.request_id, toolId: e.tool_id, summary: e.summary, options: e.options, arguments: e.arguments },
    });
  },
  permission_answered(t, e) {
    const tool = t.items.get(`tool/${e.call_id}`);
    if (tool) {
      t.put({
        ...tool, phase: tool.phase === "awaiting_approval" ? "announced" : tool.phase,
        permission: null, decision: e.decision,
      });
    }
    t.put({ kind: "approval", key: `approval/${e.request_id}/${e.seq}`, turnId: e.turn_id, callId: e.call_id, decision: e.decision });
  },
  notice(t, e) {
    t.put({ kind: "notice", key: `notice/${e.seq}`, turnId: e.turn_id, level: e.level, text: e.text });
  },
  hook_ran(t, e) {
    t.put({ kind: "hook", key: `hook/${e.seq}`, turnId: e.turn_id, hook: e.hook, event: e.event, decision: e.decision, summary: e.summary });
  },
  plan_updated(t, e) {
    const entries = (Array.isArray(e.items) ? e.items : [])
      .filter((i) => i && typeof i === "object")
      .map((i) => ({ content: String(i.content ?? ""), status: String(i.status ?? "pending") }));
    t.put({ kind: "plan", key: `plan/${e.seq}`, turnId: e.turn_id, entries });
  },
  compaction_started(t, e) {
    const key = `compaction/${e.seq}`;
    t.compaction = key;
    t.put({ kind: "compaction", key, turnId: e.turn_id, trigger: e.reason, tokensBefore: e.tokens_before, outcome: null, tokensAfter: null, summary: "" });
  },
  compaction_ended(t, e) {
    const started = t.compaction ? t.items.get(t.compaction) : null;
    t.compaction = null;
    const base = started ?? { kind: "compaction", key: `compaction/${e.seq}`, turnId: e.turn_id, trigger: "", tokensBefore: e.tokens_before };
    t.put({ ...base, outcome: e.outcome, tokensAfter: e.tokens_after, summary: e.reason });
    // The context is smaller from now on: the header's fill shows it before the next usage.
    if (e.outcome === "compacted" && t.usage) t.usage = { ...t.usage, context_tokens: e.tokens_after };
  },
  mode_changed(t, e) {
    t.mode = e.mode;
    t.put({ kind: "mode", key: `mode/${e.seq}`, turnId: e.turn_id, mode: e.mode });
  },
  model_changed(t, e) {
    t.model = e.model;
  },
  step_started(t, e) {
    t.model = e.model || t.model;
  },
  usage(t, e) {
    t.usage = e;
  },
  turn_ended(t, e) {
    t.running = false;
    for (const [key, item] of t.items) {
      if (item.kind === "message" && item.turnId === e.turn_id && !item.final) {
        t.items.set(key, { ...item, final: true });
      }
    }
    for (const key of Array.from(t.openTools)) {
      const tool = t.items.get(key);
      if (tool && tool.turnId === e.turn_id) {
        t.openTools.delete(key);
        t.items.set(key, { ...tool, phase: "finished", status: tool.status ?? "cancelled", permission: null });
      }
    }
    t.put({ kind: "turn_end", key: `turn_end/${e.seq}`, turnId: e.turn_id, outcome: e.outcome, reason: e.reason, steps: e.steps });
  },
};
