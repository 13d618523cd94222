// One open session in the page: its folded transcript, the history pages loaded so far,
// and the live event stream (resumed with Last-Event-ID after a drop or a server restart).
import { api, followSession } from "./api.js";
import { Transcript } from "./view.js";

const PAGE = 100;

export class OpenSession {
  constructor(id, onChange, heartbeatS = 15) {
    this.idleMs = Math.max(5, heartbeatS) * 2500;
    this.id = id;
    this.onChange = onChange;
    /** events loaded so far, oldest first (history pages, then live) */
    this.events = [];
    this.transcript = new Transcript();
    this.olderCursor = null;
    this.loadingOlder = false;
    this.detail = null;
    this.connection = "connecting";
    this.connectionDetail = "";
    this.live = false;
    this.running = null;
    /** a compaction outside any turn (manual: this page's or another front end's) runs */
    this.compacting = false;
    /** compaction endings received live: tells a late receipt from a finished compaction */
    this.compactionsEnded = 0;
    this.abort = new AbortController();
  }

  /** Load the newest history page and the detail, then follow the live stream. */
  async open() {
    const [detail, page] = await Promise.all([api.session(this.id), api.history(this.id, { limit: PAGE })]);
    this.detail = detail;
    this.live = detail.live;
    this.running = detail.running;
    this.events = page.events.slice().reverse();
    this.olderCursor = page.next_cursor;
    this.transcript.applyAll(this.events);
    // A compaction another front end started before this page opened: still under way if
    // the session is live (a stored session's unended one was cut by a crash).
    const c = this.transcript.compaction ? this.transcript.items.get(this.transcript.compaction) : null;
    this.compacting = Boolean(this.live && c && !c.turnId && c.outcome === null);
    this.onChange();
    this.follow(page.last_seq);
  }

  follow(afterSeq) {
    followSession(this.id, {
      lastEventId: this.transcript.lastSeq >= 0 ? this.transcript.lastSeq : afterSeq,
      signal: this.abort.signal,
      idleMs: this.idleMs,
      onState: (state, detail) => {
        this.connection = state;
        this.connectionDetail = detail;
        this.onChange();
      },
      onEvent: (msg) => this.received(msg),
    });
  }

  received(msg) {
    let data;
    try {
      data = JSON.parse(msg.data);
    } catch {
      return;
    }
    if (msg.event === "hello" || msg.event === "state") {
      this.live = Boolean(data.live);
      this.running = data.running ?? null;
      if (!this.live) this.compacting = false; // closed: nothing runs in it any more
      this.onChange();
      return;
    }
    if (msg.event === "deleted") {
      this.connection = "deleted";
      this.close();
      this.onChange();
      return;
    }
    if (typeof data.seq !== "number") return;
    if (this.transcript.apply(data)) {
      this.events.push(data);
      if (data.type === "user_message") {
        this.running = data.turn_id;
        this.compacting = false; // a turn starts only once no compaction runs
      }
      if (data.type === "turn_ended") this.running = null;
      if (data.type === "compaction_started" && !data.turn_id) this.compacting = true;
      if (data.type === "compaction_ended") {
        this.compactionsEnded += 1;
        if (!data.turn_id) this.compacting = false;
      }
      this.onChange(data);
    }
  }

  /** The page before the oldest loaded one; the transcript is folded again from the start. */
  async loadOlder() {
    if (!this.olderCursor || this.loadingOlder) return;
    this.loadingOlder = true;
    try {
      const page = await api.history(this.id, { limit: PAGE, cursor: this.olderCursor });
      this.olderCursor = page.next_cursor;
      const older = page.events.slice().reverse();
      const first = this.events.length ? this.events[0].seq : Infinity;
      this.events = [...older.filter((e) => e.seq < first), ...this.events];
      const t = new Transcript();
      t.applyAll(this.events);
      this.transcript = t;
    } finally {
      this.loadingOlder = false;
      this.onChange();
    }
  }

  /** After the server restarted (a new token was given): follow again from the last seq. */
  reconnect() {
    this.abort.abort();
    this.abort = new AbortController();
    this.follow(this.transcript.lastSeq);
  }

  close() {
    this.abort.abort();
  }
}
