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
      if (data.type === "user_message") this.running = data.turn_id;
      if (data.type === "turn_ended") this.running = null;
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
