// The page: the session list on the left, the open session on the right (header with usage
// and context fill, compact and delete, the transcript, the prompt box with its queue and
// the cancel button).
import { Component, createRef } from "preact";
import { html } from "./html.js";
import { api, ApiError, hasToken, newRequestId, setTokenFrom, takeTokenFromLocation } from "./api.js";
import { OpenSession } from "./session.js";
import { TranscriptItems } from "./transcript.js";
import { loadPrefs, savePrefs } from "./prefs.js";
import { CompactDialog, DeleteDialog } from "./dialogs.js";

const LIST_REFRESH_MS = 4000;
const BUSY_RETRY_MS = 300;

function timeAgo(seconds) {
  const d = Date.now() / 1000 - seconds;
  if (d < 60) return "just now";
  if (d < 3600) return `${Math.floor(d / 60)} min ago`;
  if (d < 86400) return `${Math.floor(d / 3600)} h ago`;
  return new Date(seconds * 1000).toLocaleDateString();
}

function formatTokens(n) {
  if (n === null || n === undefined) return "–";
  return n >= 10000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

export class TokenScreen extends Component {
  submit(e) {
    e.preventDefault();
    const value = e.target.elements.token.value;
    if (setTokenFrom(value)) this.props.onToken();
    else this.setState({ error: "That is not a dashboard URL or token." });
  }
  render({ reason }, { error }) {
    return html`
      <div class="token-screen">
        <h1>rawtrio dashboard</h1>
        <p>${reason || "Open the URL that `rawtrio dashboard` (or `rawtrio serve --dashboard`) printed, or paste it here."}</p>
        <form onSubmit=${(e) => this.submit(e)}>
          <input name="token" type="password" autocomplete="off" placeholder="http://127.0.0.1:PORT/#token=…" />
          <button type="submit">Open</button>
        </form>
        ${error ? html`<div class="error-line">${error}</div>` : null}
      </div>`;
  }
}

function SessionList({ sessions, current, onOpen, onDelete, query, onQuery, onMore, more, onNew }) {
  return html`
    <aside class="sidebar">
      <div class="sidebar-top">
        <input class="search" type="search" placeholder="Search sessions" value=${query}
               onInput=${(e) => onQuery(e.target.value)} aria-label="Search sessions" />
        <button type="button" class="new" onClick=${onNew} title="New session">New</button>
      </div>
      <ul class="sessions">
        ${sessions.map((s) => html`
          <li key=${s.id} class=${s.id === current ? "current" : ""} data-session-id=${s.id}>
            <button type="button" class="s-open" onClick=${() => onOpen(s.id)}
                    onKeyDown=${(e) => { if (e.key === "Delete" || e.key === "Backspace") { e.preventDefault(); onDelete(s); } }}>
              <span class="s-title">${s.title || "untitled"}</span>
              <span class="s-meta">
                ${s.running ? html`<span class="dot running" title="running"></span>` : s.live ? html`<span class="dot live" title="live"></span>` : null}
                ${timeAgo(s.updated_at)} · ${s.message_count} msgs
              </span>
              <span class="s-cwd">${s.cwd}</span>
              ${s.match && s.match.snippet ? html`<span class="s-match">${s.match.snippet}</span>` : null}
            </button>
            <button type="button" class="s-delete" aria-label=${`Delete session ${s.title || "untitled"}`}
                    title="Delete this session" onClick=${() => onDelete(s)}>×</button>
          </li>`)}
      </ul>
      ${more ? html`<button type="button" class="more" onClick=${onMore}>More</button>` : null}
    </aside>`;
}

function UsageBar({ usage, context }) {
  if (!usage) return null;
  const window = context.window ?? usage.context_window;
  const tokens = context.tokens ?? usage.context_tokens;
  const fill = window ? Math.min(1, tokens / window) : null;
  return html`
    <div class="usage" data-part="usage">
      <span title="input tokens">in ${formatTokens(usage.input_tokens)}</span>
      <span title="output tokens">out ${formatTokens(usage.output_tokens)}</span>
      <span title="cache read / write">cache ${formatTokens(usage.cache_read_tokens)}/${formatTokens(usage.cache_write_tokens)}</span>
      ${fill !== null ? html`
        <span class="ctx" title=${`context ${tokens} of ${window} tokens`}>
          ctx <meter min="0" max="1" low="0.7" high="0.9" optimum="0" value=${fill}></meter> ${Math.round(fill * 100)}%
        </span>` : html`<span class="ctx">ctx ${formatTokens(tokens)}</span>`}
      <span class="cost" title="cost">${usage.cost_usd === null || usage.cost_usd === undefined ? "cost –" : `$${usage.cost_usd.toFixed(4)}`}</span>
    </div>`;
}

export class App extends Component {
  constructor(props) {
    super(props);
    this.prefs = loadPrefs();
    this.state = {
      phase: hasToken() ? "loading" : "token",
      tokenReason: null,
      boot: null,
      sessions: [],
      nextCursor: null,
      query: "",
      tick: 0,
      now: Date.now() / 1000,
      queue: [],
      error: null,
      usage: null,
      draft: "",
      /** the title being typed in the header, or null when not renaming */
      renaming: null,
      /** the session the delete dialog asks about: {id, title, busy, error}, or null */
      deleting: null,
      /** the compact dialog: {focus (the text being typed), busy, error}, or null */
      compactForm: null,
      /** a line about something another front end did (the open session deleted) */
      notice: null,
    };
    /** sessions deleted from this page: a list page fetched before the deletion skips them */
    this.gone = new Set();
    /** the session this page's delete request is about, while it is under way */
    this.deletingId = null;
    this.open = null;
    /** a session to open once started (named in the URL) */
    this.wanted = props.initialSession || null;
    this.frame = 0;
    this.scroller = createRef();
    this.stick = true;
  }

  componentDidMount() {
    this.applyTheme();
    if (this.state.phase === "loading") this.start();
    // The URL pasted into this tab's address bar again (after a reload, or a new token
    // after a server restart) changes only the fragment: no page load, so listen for it.
    this.onHash = () => {
      const { session, found } = takeTokenFromLocation();
      if (!found) return;
      if (session) this.wanted = session;
      else if (this.open) history.replaceState(null, "", `${location.pathname}#s=${encodeURIComponent(this.open.id)}`);
      this.setState({ phase: "loading" });
      this.start();
    };
    window.addEventListener("hashchange", this.onHash);
    this.timer = setInterval(() => this.everySecond(), 1000);
    this.lister = setInterval(() => this.refreshList(), LIST_REFRESH_MS);
  }

  componentWillUnmount() {
    window.removeEventListener("hashchange", this.onHash);
    clearInterval(this.timer);
    clearInterval(this.lister);
    if (this.open) this.open.close();
  }

  applyTheme() {
    document.documentElement.dataset.theme = this.prefs.theme;
  }

  setPrefs(change) {
    Object.assign(this.prefs, change);
    savePrefs(this.prefs);
    this.applyTheme();
    this.setState({ tick: this.state.tick + 1 });
  }

  async start() {
    try {
      const boot = await api.bootstrap();
      this.boot = boot;
      this.ready = true;
      this.setState({ boot, phase: "ready" });
      const named = this.wanted;
      this.wanted = null;
      if (this.open && (!named || named === this.open.id)) {
        this.open.reconnect();
        await this.refreshList();
      } else if (named) {
        // A session named in the URL opens at once, beside the list (first paint first).
        await Promise.all([this.openSession(named), this.refreshList()]);
      } else {
        const sessions = await this.refreshList();
        const last = this.prefs.lastSession;
        if (last && sessions.some((s) => s.id === last)) await this.openSession(last);
      }
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        this.ready = false;
        this.setState({ phase: "token", tokenReason: "The token was refused: the server may have restarted. Paste the new URL it printed." });
      } else this.setState({ phase: "ready", error: err.message });
    }
  }

  async refreshList(more = false) {
    if (!this.ready || (document.hidden && !more)) return this.state.sessions;
    try {
      const page = await api.sessions({ q: this.state.query || undefined, cursor: more ? this.state.nextCursor : undefined });
      const open = this.open;
      const mine = open && open.detail && page.sessions.find((x) => x.id === open.id);
      if (mine && mine.title !== open.detail.title) open.detail = { ...open.detail, title: mine.title };
      const fresh = page.sessions.filter((x) => !this.gone.has(x.id));
      const sessions = more ? [...this.state.sessions, ...fresh] : fresh;
      this.setState({ sessions, nextCursor: page.next_cursor });
      return sessions;
    } catch (err) {
      if (err.status === 401) this.tokenRefused();
      return this.state.sessions;
    }
  }

  tokenRefused() {
    this.ready = false;
    this.setState({ phase: "token", tokenReason: "The token was refused: the server restarted. Paste the new URL it printed; the open session continues where it stopped." });
  }

  onQuery(query) {
    this.setState({ query });
    clearTimeout(this.searchTimer);
    this.searchTimer = setTimeout(() => this.refreshList(), 200);
  }

  everySecond() {
    if (this.open && this.open.transcript.openTools.size) this.setState({ now: Date.now() / 1000 });
  }

  async openSession(id) {
    if (this.open) this.open.close();
    this.stick = true;
    const heartbeat = this.boot && this.boot.limits ? this.boot.limits.heartbeat_s : 15;
    const session = new OpenSession(id, (event) => this.changed(session, event), heartbeat);
    this.open = session;
    this.setPrefs({ lastSession: id });
    history.replaceState(null, "", `${location.pathname}#s=${encodeURIComponent(id)}`);
    this.setState({ queue: [], usage: null, error: null, notice: null });
    try {
      await session.open();
      if (this.open === session) this.setState({ usage: session.detail.usage });
    } catch (err) {
      if (err.status === 401) this.tokenRefused();
      else this.setState({ error: err.message });
    }
  }

  changed(session, event) {
    if (session !== this.open) return;
    if (session.connection === "failed" && session.connectionDetail === "401") {
      this.tokenRefused();
      return;
    }
    if (session.connection === "deleted") {
      // Deleted: by this page (its own request may not have answered yet) or elsewhere.
      const elsewhere = this.deletingId !== session.id;
      this.dropSession(session.id);
      if (elsewhere) this.setState({ notice: "The session was deleted (by another page or front end)." });
      return;
    }
    if (event && event.type === "usage") this.refreshUsage();
    if (event && (event.type === "turn_ended" || event.type === "compaction_ended")) {
      this.refreshUsage();
      this.refreshList();
    }
    // Prompts queued while a turn or a compaction ran go out once nothing runs (whatever
    // ended it: the turn's end, the compaction's, the session closing).
    if (this.state.queue.length && !this.isRunning()) queueMicrotask(() => this.drainQueue());
    if (!this.frame) {
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.setState({ tick: this.state.tick + 1 });
      });
    }
  }

  async refreshUsage() {
    const session = this.open;
    if (!session) return;
    try {
      const u = await api.usage(session.id);
      if (this.open === session) this.setState({ usage: u.usage });
    } catch {
      // the next usage event tries again
    }
  }

  /** A turn or a compaction runs: prompts are queued, Cancel stops it, no compaction. */
  isRunning() {
    return Boolean(this.open && (this.open.running || this.open.transcript.running || this.open.compacting));
  }

  async submit(text) {
    if (!text.trim()) return;
    if (!this.open) {
      try {
        const detail = await api.create({});
        await this.openSession(detail.id);
        this.refreshList();
      } catch (err) {
        this.setState({ error: err.message });
        return;
      }
    }
    this.setState({ draft: "" });
    if (this.isRunning() || this.state.queue.length) {
      this.setState({ queue: [...this.state.queue, { id: newRequestId(), text }] });
      return;
    }
    await this.send({ id: newRequestId(), text });
  }

  async send(prompt) {
    const session = this.open;
    session.running = session.running || "pending";
    this.setState({ error: null });
    try {
      await api.submit(session.id, prompt.id, prompt.text);
    } catch (err) {
      if (session.running === "pending") session.running = null;
      if (err.code === "turn_in_progress" || err.code === "session_busy") {
        this.setState({ queue: [prompt, ...this.state.queue] });
        // Busy with something the stream has not shown as running (or has just shown
        // ending): try again shortly; a run the stream shows holds the queue until it ends.
        if (!this.isRunning()) setTimeout(() => this.drainQueue(), BUSY_RETRY_MS);
      } else if (err.status === 401) {
        this.setState({ queue: [prompt, ...this.state.queue] });
        this.tokenRefused();
      } else {
        this.setState({ error: err.message, draft: prompt.text });
      }
    }
  }

  drainQueue() {
    if (!this.open || this.isRunning() || !this.state.queue.length) return;
    const [next, ...rest] = this.state.queue;
    this.setState({ queue: rest });
    this.send(next);
  }

  async cancel() {
    if (!this.open) return;
    try {
      await api.cancel(this.open.id);
    } catch (err) {
      this.setState({ error: err.message });
    }
  }

  async answer(requestId, decision) {
    try {
      await api.answer(this.open.id, requestId, decision);
    } catch (err) {
      if (err.code === "already_answered") return;
      throw err;
    }
  }

  async setMode(mode) {
    if (!this.open) return;
    try {
      this.open.detail = await api.setMode(this.open.id, mode);
    } catch (err) {
      this.setState({ error: err.message });
    }
  }

  startRename() {
    if (this.open && this.open.detail) this.setState({ renaming: this.open.detail.title || "" });
  }

  /** Ends the title edit (Enter or leaving the box) with what the box holds. The text being
   * typed lives in `state.renaming`, so a redraw mid-edit (an event, the list's refresh)
   * never resets it to the stored title. */
  async rename(value) {
    if (this.state.renaming === null || !this.open) return;
    const title = value.trim();
    this.setState({ renaming: null });
    if (!title) return;
    try {
      this.open.detail = await api.rename(this.open.id, title);
      this.refreshList();
    } catch (err) {
      this.setState({ error: err.message });
    }
  }

  askDelete(s) {
    this.setState({ deleting: { id: s.id, title: s.title, busy: false, error: null } });
  }

  /** Delete the session the dialog asks about. A refusal (a turn runs in it, another front
   * end is on it) is shown in the dialog and changes nothing. */
  async confirmDelete() {
    const target = this.state.deleting;
    if (!target || target.busy) return;
    this.setState({ deleting: { ...target, busy: true, error: null } });
    this.deletingId = target.id;
    try {
      await api.remove(target.id);
    } catch (err) {
      if (err.status === 401) {
        this.setState({ deleting: null });
        this.tokenRefused();
        return;
      }
      if (err.status !== 404) { // 404: gone already (deleted elsewhere meanwhile)
        this.setState({ deleting: { ...target, busy: false, error: err.message } });
        return;
      }
    } finally {
      this.deletingId = null;
    }
    this.setState({ deleting: null });
    this.dropSession(target.id);
  }

  /** A deleted session leaves the list; closed if open (the page shows its empty state). */
  dropSession(id) {
    this.gone.add(id);
    this.setState({ sessions: this.state.sessions.filter((s) => s.id !== id) });
    if (this.prefs.lastSession === id) this.setPrefs({ lastSession: null });
    if (this.open && this.open.id === id) {
      this.open.close();
      this.open = null;
      history.replaceState(null, "", location.pathname);
      this.setState({ queue: [], usage: null, renaming: null, compactForm: null, error: null });
    }
  }

  openCompact() {
    if (this.open && this.open.detail && !this.isRunning()) {
      this.setState({ compactForm: { focus: "", busy: false, error: null } });
    }
  }

  /** Start a compaction; its progress and result come as events into the transcript. A
   * refusal (a turn or a compaction runs) is shown in the dialog. */
  async confirmCompact(focus) {
    const session = this.open;
    const form = this.state.compactForm;
    if (!session || !form || form.busy) return;
    const endedBefore = session.compactionsEnded;
    this.setState({ compactForm: { ...form, busy: true, error: null } });
    try {
      const receipt = await api.compact(session.id, newRequestId(), focus.trim());
      // Under way (its compaction_started may still be on its way): nothing else may start.
      if (receipt.status === "running" && session.compactionsEnded === endedBefore) session.compacting = true;
      this.stick = true;
      this.setState({ compactForm: null });
    } catch (err) {
      if (err.status === 401) {
        this.setState({ compactForm: null });
        this.tokenRefused();
      } else if (this.state.compactForm) {
        this.setState({ compactForm: { ...this.state.compactForm, busy: false, error: err.message } });
      }
    }
  }

  onKeyDown(e) {
    if (e.key === "Enter" && !e.shiftKey && this.prefs.enterSends) {
      e.preventDefault();
      this.submit(e.target.value);
    } else if (e.key === "Escape" && this.isRunning()) {
      e.preventDefault();
      this.cancel();
    }
  }

  componentDidUpdate() {
    const el = this.scroller.current;
    if (el && this.stick) el.scrollTop = el.scrollHeight;
  }

  onScroll(e) {
    const el = e.target;
    this.stick = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
    if (el.scrollTop < 200 && this.open && this.open.olderCursor && !this.open.loadingOlder) {
      const before = el.scrollHeight;
      this.open.loadOlder().then(() => requestAnimationFrame(() => {
        el.scrollTop += el.scrollHeight - before;
      }));
    }
  }

  renderMain() {
    const s = this.open;
    const { queue, error, notice, usage, draft, renaming } = this.state;
    const running = this.isRunning();
    const compacting = Boolean(s && s.compacting);
    const t = s ? s.transcript : null;
    const context = t && t.usage ? { tokens: t.usage.context_tokens, window: t.usage.context_window } : {};
    const conn = s ? s.connection : "";
    return html`
      <main class="main">
        <header class="head">
          ${s && s.detail ? html`
            <div class="title-row">
              ${renaming !== null ? html`
                <input class="rename" ref=${(el) => { if (el && document.activeElement !== el) el.focus(); }}
                       value=${renaming} onInput=${(e) => this.setState({ renaming: e.target.value })}
                       onKeyDown=${(e) => { if (e.key === "Enter") this.rename(e.target.value); if (e.key === "Escape") this.setState({ renaming: null }); }}
                       onBlur=${(e) => this.rename(e.target.value)} aria-label="Session title" />`
                : html`<h2 class="title" onDblClick=${() => this.startRename()} title="Double-click to rename">${s.detail.title || "untitled"}</h2>`}
              <span class=${`conn conn-${conn}`} data-part="connection" title=${s.connectionDetail}>${
                conn === "open" ? (s.live ? (compacting ? "compacting" : running ? "running" : "live") : "stored") : conn}</span>
              <span class="model">${(t && t.model) || s.detail.model || ""}</span>
              ${this.boot && this.boot.modes ? html`
                <select class="mode-select" aria-label="Permission mode" value=${(t && t.mode) || s.detail.mode || "default"}
                        onChange=${(e) => this.setMode(e.target.value)}>
                  ${this.boot.modes.map((m) => html`<option value=${m}>${m}</option>`)}
                </select>` : null}
              <div class="head-actions">
                <button type="button" class="compact" aria-label="Compact the context" disabled=${running}
                        title=${compacting ? "A compaction is under way" : running ? "A turn is running: compact between turns"
                          : "Summarize older turns to free context"}
                        onClick=${() => this.openCompact()}>Compact</button>
                <button type="button" class="delete" aria-label="Delete this session"
                        title="Delete this session" onClick=${() => this.askDelete(s.detail)}>Delete</button>
              </div>
            </div>
            <${UsageBar} usage=${usage} context=${context} />` : html`<div class="title-row"><h2 class="title">New session</h2></div>`}
        </header>
        ${error ? html`<div class="banner error" data-part="error" role="alert">${error}<button type="button" onClick=${() => this.setState({ error: null })}>×</button></div>` : null}
        ${notice ? html`<div class="banner info" data-part="notice" role="status">${notice}<button type="button" aria-label="Dismiss" onClick=${() => this.setState({ notice: null })}>×</button></div>` : null}
        ${conn === "reconnecting" ? html`<div class="banner warn" data-part="reconnecting">Connection lost; reconnecting…</div>` : null}
        <section class="transcript" ref=${this.scroller} onScroll=${(e) => this.onScroll(e)} data-part="transcript">
          ${s && s.olderCursor ? html`<button type="button" class="older" onClick=${() => s.loadOlder()}>${s.loadingOlder ? "Loading…" : "Load older"}</button>` : null}
          ${t ? html`<${TranscriptItems} items=${t.list()} expand=${this.prefs.expandTools} now=${this.state.now}
                        onAnswer=${(r, d) => this.answer(r, d)} />`
            : html`<div class="empty">Pick a session on the left, or write a prompt to start a new one.</div>`}
        </section>
        <footer class="composer">
          ${queue.length ? html`
            <ol class="queue" data-part="queue">
              ${queue.map((q, i) => html`<li key=${q.id}><span>${q.text}</span>
                <button type="button" title="Remove from the queue" onClick=${() => this.setState({ queue: queue.filter((_, j) => j !== i) })}>×</button></li>`)}
            </ol>` : null}
          <form class="prompt" onSubmit=${(e) => { e.preventDefault(); this.submit(e.target.elements.prompt.value); }}>
            <textarea name="prompt" rows="3" placeholder=${running ? "Queue a prompt (sent when this turn ends)" : "Write a prompt (Enter sends, Shift+Enter for a new line)"}
                      value=${draft} onInput=${(e) => this.setState({ draft: e.target.value })}
                      onKeyDown=${(e) => this.onKeyDown(e)} aria-label="Prompt"></textarea>
            <div class="actions">
              <button type="submit" class="send">${running ? "Queue" : "Send"}</button>
              ${running ? html`<button type="button" class="cancel" onClick=${() => this.cancel()}>Cancel</button>` : null}
            </div>
          </form>
        </footer>
      </main>`;
  }

  render(_, { phase, tokenReason, sessions, query, nextCursor, deleting, compactForm }) {
    if (phase === "token") {
      return html`<${TokenScreen} reason=${tokenReason} onToken=${() => { this.setState({ phase: "loading" }); this.start(); }} />`;
    }
    if (phase === "loading") return html`<div class="loading">Loading…</div>`;
    return html`
      <div class="layout">
        <${SessionList} sessions=${sessions} current=${this.open && this.open.id} onOpen=${(id) => this.openSession(id)}
          onDelete=${(s) => this.askDelete(s)}
          query=${query} onQuery=${(q) => this.onQuery(q)} more=${Boolean(nextCursor)}
          onMore=${() => this.refreshList(true)} onNew=${() => this.newSession()} />
        ${this.renderMain()}
        <div class="prefs">
          <select aria-label="Theme" value=${this.prefs.theme} onChange=${(e) => this.setPrefs({ theme: e.target.value })}>
            <option value="auto">auto</option><option value="light">light</option><option value="dark">dark</option>
          </select>
          <label><input type="checkbox" checked=${this.prefs.expandTools} onChange=${(e) => this.setPrefs({ expandTools: e.target.checked })} /> expand tools</label>
        </div>
        ${deleting ? html`<${DeleteDialog} target=${deleting} onConfirm=${() => this.confirmDelete()}
                            onDismiss=${() => this.setState({ deleting: null })} />` : null}
        ${compactForm ? html`<${CompactDialog} form=${compactForm}
                               onFocusText=${(focus) => this.setState({ compactForm: { ...this.state.compactForm, focus } })}
                               onConfirm=${(focus) => this.confirmCompact(focus)}
                               onDismiss=${() => this.setState({ compactForm: null })} />` : null}
      </div>`;
  }

  async newSession() {
    try {
      const detail = await api.create({});
      await this.refreshList();
      await this.openSession(detail.id);
    } catch (err) {
      this.setState({ error: err.message });
    }
  }
}
