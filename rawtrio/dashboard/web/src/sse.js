// A Server-Sent Events client over fetch. EventSource cannot send an Authorization header,
// and the API takes its token only from that header, so the stream is read with fetch and
// parsed here (the text/event-stream format: https://html.spec.whatwg.org/#event-stream-interpretation).
//
// It reconnects after a dropped stream or a server restart, with backoff, and sends the last
// event id it saw as `Last-Event-ID`, so the server replays exactly what was missed.

const MAX_BACKOFF_MS = 5000;

/**
 * Follow `url` until `signal` aborts. `onEvent({id, event, data})` for each event,
 * `onState("open" | "reconnecting" | "failed", detail)` when the connection changes.
 * `lastEventId` starts the stream after that id (the newest event already shown).
 * `idleMs`: a stream silent for this long (the server pings every `heartbeat_s`) is taken
 * for dead — a suspended laptop, a half-open socket — and opened again.
 */
export async function followEvents(url, { headers, lastEventId, onEvent, onState, signal, idleMs = 40000 }) {
  let lastId = lastEventId ?? "";
  let backoff = 250;
  while (!signal.aborted) {
    const attempt = new AbortController();
    const stop = () => attempt.abort();
    signal.addEventListener("abort", stop, { once: true });
    let watchdog = 0;
    const alive = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => attempt.abort(), idleMs);
    };
    try {
      const h = { ...headers(), Accept: "text/event-stream" };
      if (lastId !== "") h["Last-Event-ID"] = String(lastId);
      alive();
      const response = await fetch(url, { headers: h, signal: attempt.signal, cache: "no-store" });
      if (response.status === 401 || response.status === 403 || response.status === 404) {
        onState("failed", `${response.status}`);
        return;
      }
      if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
      onState("open", "");
      backoff = 250;
      for await (const ev of parseStream(response.body, attempt.signal, alive)) {
        if (ev.id !== null) lastId = ev.id;
        if (ev.data !== null) onEvent(ev);
      }
      throw new Error("stream ended");
    } catch (err) {
      if (signal.aborted) return;
      onState("reconnecting", String(err && err.message ? err.message : err));
      await sleep(backoff, signal);
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    } finally {
      clearTimeout(watchdog);
      signal.removeEventListener("abort", stop);
    }
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

async function* parseStream(body, signal, alive) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const abort = () => reader.cancel().catch(() => {});
  signal.addEventListener("abort", abort, { once: true });
  let buffer = "";
  let ev = blank();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      alive();
      buffer += value;
      let nl;
      while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + (buffer.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (ev.data !== null || ev.id !== null) yield ev;
          ev = blank();
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (field === "data") ev.data = ev.data === null ? val : `${ev.data}\n${val}`;
        else if (field === "event") ev.event = val;
        else if (field === "id" && !val.includes("\0")) ev.id = val;
      }
    }
  } finally {
    signal.removeEventListener("abort", abort);
  }
}

function blank() {
  return { id: null, event: "message", data: null };
}
