// The transcript: one component per item of the fold (view.js), keyed by the item's key.
import { Component } from "preact";
import { html, pure } from "./html.js";
import { renderMarkdown, highlight } from "./markdown.js";
import { lineDiff } from "./diff.js";

const OPTION_LABELS = { allow_once: "Allow once", allow_always: "Always allow", deny: "Deny" };

function Markdown({ text }) {
  return html`<div class="md" dangerouslySetInnerHTML=${{ __html: renderMarkdown(text) }}></div>`;
}

const UserItem = pure(({ item }) => html`
  <div class="item user" data-kind="user">
    <div class="who">you</div>
    <div class="bubble"><pre class="plain">${item.text}</pre></div>
    ${item.note ? html`<div class="note">${item.note}</div>` : null}
  </div>`);

const MessageItem = pure(({ item }) => {
  if (!item.text && item.final) return null;
  return html`
    <div class=${`item message${item.final ? "" : " streaming"}${item.cut ? " cut" : ""}`}
         data-kind="message" data-key=${item.key}>
      <${Markdown} text=${item.text} />
      ${item.cut ? html`<div class="cut-note">interrupted: ${item.cut}</div>` : null}
    </div>`;
});

const ThinkingItem = pure(({ item }) => html`
  <details class="item thinking" data-kind="thinking">
    <summary>thinking</summary>
    <pre class="plain">${item.text}</pre>
  </details>`);

function formatSeconds(s) {
  if (s === null || s === undefined) return "";
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s.toFixed(1)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** One line for the card's header: the command, the path, or the first argument. */
function argSummary(tool) {
  const a = tool.arguments;
  if (!a || typeof a !== "object") return "";
  for (const k of ["command", "path", "file_path", "pattern", "query", "url"]) {
    if (typeof a[k] === "string") return a[k];
  }
  const first = Object.values(a).find((v) => typeof v === "string");
  return first || "";
}

function Diff({ diff }) {
  const lines = lineDiff(diff.oldText, diff.newText);
  return html`
    <div class="diff" data-part="diff">
      <div class="diff-path">${diff.path}</div>
      <pre class="diff-body">${lines.map((l) => html`<div class=${`d${l.op === "+" ? "add" : l.op === "-" ? "del" : "ctx"}`}>${l.op} ${l.text}</div>`)}</pre>
    </div>`;
}

class ToolItem extends Component {
  constructor(props) {
    super(props);
    this.state = { open: null };
  }
  shouldComponentUpdate(next, nextState) {
    return next.item !== this.props.item || nextState !== this.state || next.now !== this.props.now
      || next.expand !== this.props.expand;
  }
  async answer(decision) {
    const { item, onAnswer } = this.props;
    this.setState({ answering: true, answerError: null });
    try {
      await onAnswer(item.permission.requestId, decision);
    } catch (err) {
      this.setState({ answerError: err.message });
    } finally {
      this.setState({ answering: false });
    }
  }
  render({ item, expand, now }, { open, answering, answerError }) {
    const running = item.phase === "running";
    const waiting = item.phase === "awaiting_approval";
    const isOpen = open ?? (expand || running || waiting);
    const elapsed = item.startedAt === null ? null
      : ((item.endedAt ?? (running ? now : item.startedAt)) - item.startedAt);
    const status = item.phase === "finished" ? item.status : item.phase.replace("_", " ");
    const args = item.arguments && typeof item.arguments === "object" ? item.arguments : null;
    return html`
      <div class=${`item tool phase-${item.phase} status-${item.status || "none"}`}
           data-kind="tool" data-call-id=${item.callId} data-phase=${item.phase}
           data-status=${item.status || ""}>
        <button class="tool-head" type="button" aria-expanded=${isOpen ? "true" : "false"}
                onClick=${() => this.setState({ open: !isOpen })}>
          <span class="chev">${isOpen ? "▾" : "▸"}</span>
          <span class="tool-name">${item.toolId || item.name}</span>
          <span class="tool-arg">${argSummary(item)}</span>
          <span class=${`badge b-${item.phase === "finished" ? item.status : item.phase}`}>${status}${item.deniedBy ? ` by ${item.deniedBy}` : ""}</span>
          <span class="dur">${elapsed !== null && elapsed >= 0 ? formatSeconds(elapsed) : ""}</span>
        </button>
        ${waiting && item.permission ? html`
          <div class="approval" data-part="approval">
            <div class="approval-summary">${item.permission.summary || `${item.permission.toolId} wants to run`}</div>
            <div class="approval-buttons">
              ${(item.permission.options || []).map((o) => html`
                <button type="button" class=${`answer a-${o}`} data-decision=${o} disabled=${answering}
                        onClick=${() => this.answer(o)}>${OPTION_LABELS[o] || o}</button>`)}
            </div>
            ${answerError ? html`<div class="error-line">${answerError}</div>` : null}
          </div>` : null}
        ${isOpen ? html`
          <div class="tool-body">
            ${args ? html`<div class="label">input</div>${
              typeof args.command === "string"
                ? html`<pre class="code"><code class="hljs" dangerouslySetInnerHTML=${{ __html: highlight(args.command, "bash") }}></code></pre>`
                : html`<pre class="code"><code class="hljs" dangerouslySetInnerHTML=${{ __html: highlight(JSON.stringify(args, null, 2), "json") }}></code></pre>`}` : null}
            ${item.output && item.phase !== "finished" ? html`<div class="label">output</div><pre class="output" data-part="output">${item.output}</pre>` : null}
            ${item.diff ? html`<${Diff} diff=${item.diff} />` : null}
            ${item.phase === "finished" && (item.content || item.output) ? html`
              <div class="label">result</div><pre class="output" data-part="result">${item.content || item.output}</pre>` : null}
          </div>` : null}
      </div>`;
  }
}

const ApprovalItem = pure(({ item }) => html`
  <div class="item approval-line" data-kind="approval">permission: ${item.decision.replace("_", " ")}</div>`);

const NoticeItem = pure(({ item }) => html`
  <div class=${`item notice level-${item.level}`} data-kind="notice">${item.text}</div>`);

const HookItem = pure(({ item }) => html`
  <div class="item hook" data-kind="hook">hook ${item.hook} (${item.event}): ${item.decision}${item.summary ? ` — ${item.summary}` : ""}</div>`);

const PlanItem = pure(({ item }) => html`
  <div class="item plan" data-kind="plan">
    <div class="label">plan</div>
    <ul>${item.entries.map((e) => html`<li class=${`plan-${e.status}`}>${e.content}</li>`)}</ul>
  </div>`);

function tokens(n) {
  return typeof n === "number" ? `${n.toLocaleString("en-US")} tokens` : "? tokens";
}

const COMPACTION_HEADLINES = {
  compacted: "Context compacted",
  unchanged: "Context unchanged",
  cancelled: "Compaction cancelled",
  error: "Compaction failed",
};

/** A compaction: under way (a spinner), then what it did, with the sizes and the reason. */
const CompactionItem = pure(({ item }) => {
  const auto = item.trigger === "auto";
  const running = item.outcome === null;
  const state = running ? "running" : item.outcome;
  let sizes = "";
  if (running) sizes = `${tokens(item.tokensBefore)} in the context`;
  else if (item.outcome === "compacted") {
    // Both sizes are in one measure (the provider's count, the after scaled by the estimates).
    const saved = item.tokensBefore ? Math.round((1 - item.tokensAfter / item.tokensBefore) * 100) : 0;
    sizes = `${tokens(item.tokensBefore)} → ${tokens(item.tokensAfter)}${saved > 0 ? ` (−${saved}%)` : ""}`;
  } else sizes = `still ${tokens(item.tokensBefore)}`;
  return html`
    <div class=${`item compaction compaction-${state}`} data-kind="compaction" data-state=${state}
         role="status">
      <div class="compaction-head">
        ${running ? html`<span class="spinner" aria-hidden="true"></span>` : null}
        <strong>${running ? `Compacting the context${auto ? " (automatic)" : ""}…`
          : `${COMPACTION_HEADLINES[item.outcome] || `Compaction ${item.outcome}`}${auto ? " (automatic)" : ""}`}</strong>
        <span class="compaction-sizes" data-part="sizes">${sizes}</span>
      </div>
      ${item.summary ? html`<div class="note" data-part="reason">${item.summary}</div>` : null}
    </div>`;
});

const ModeItem = pure(({ item }) => html`<div class="item mode" data-kind="mode">mode: ${item.mode}</div>`);

const TurnEndItem = pure(({ item }) => html`
  <div class=${`item turn-end outcome-${item.outcome}`} data-kind="turn_end" data-outcome=${item.outcome}>
    turn ${item.outcome}${item.reason && item.outcome !== "completed" ? `: ${item.reason}` : ""}
  </div>`);

const RENDERERS = {
  user: UserItem, message: MessageItem, thinking: ThinkingItem, approval: ApprovalItem,
  notice: NoticeItem, hook: HookItem, plan: PlanItem, compaction: CompactionItem, mode: ModeItem,
  turn_end: TurnEndItem,
};

export function TranscriptItems({ items, expand, now, onAnswer }) {
  return items.map((item) => {
    if (item.kind === "tool") {
      return html`<${ToolItem} key=${item.key} item=${item} expand=${expand}
                   now=${item.phase === "running" ? now : 0} onAnswer=${onAnswer} />`;
    }
    const R = RENDERERS[item.kind];
    return R ? html`<${R} key=${item.key} item=${item} />` : null;
  });
}
