// ACP conformance checks: the official TypeScript SDK (@agentclientprotocol/sdk) as the
// client, driving a real `rawtrio acp` over stdio or WebSocket against the fake model.
//
//   node conformance.mjs stdio   (env ACP_CMD: JSON argv of `rawtrio acp`, ACP_CWD)
//   node conformance.mjs ws      (env ACP_WS_URL, ACP_WS_TOKEN, ACP_CWD)
//
// Prints one JSON line per check: {"check": name, "ok": bool, "detail": ...}. A check
// that throws or times out is reported as failed; the script goes on with the next.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import WebSocket from "ws";

const LIVENESS_MS = 60_000;
const mode = process.argv[2];
const cwd = process.env.ACP_CWD;
const children = [];

function report(check, ok, detail) {
  process.stdout.write(JSON.stringify({ check, ok, detail }) + "\n");
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

// --- a connection: the SDK client plus a log of session/update per session ------------

function stdioStream() {
  const argv = JSON.parse(process.env.ACP_CMD);
  const child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  children.push(child);
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  return { stream, child };
}

function wsStream(raw) {
  const stream = createWebSocketStream(process.env.ACP_WS_URL, {
    WebSocket: class extends WebSocket {
      constructor(url, protocols, options) {
        super(url, protocols, options);
        if (raw) raw.socket = this;
      }
    },
    headers: { Authorization: `Bearer ${process.env.ACP_WS_TOKEN}` },
  });
  return { stream };
}

async function open({ fs = false, terminal = false } = {}) {
  const state = {
    reads: [],
    writes: [],
    terminals: new Map(),
    updates: new Map(),
    wakers: [],
    permission: async () => ({ outcome: { outcome: "selected", optionId: "allow_once" } }),
    permissionRequests: [],
    raw: {},
  };
  const app = acp
    .client({ name: "rawtrio-conformance" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      const list = state.updates.get(params.sessionId) ?? [];
      list.push(params.update);
      state.updates.set(params.sessionId, list);
      for (const wake of state.wakers.splice(0)) wake();
    })
    .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
      state.reads.push(params);
      return { content: "EDITOR BUFFER (unsaved)\n" };
    })
    .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
      state.writes.push(params);
      return {};
    })
    .onRequest(acp.methods.client.terminal.create, async ({ params }) => {
      const id = `term-${state.terminals.size + 1}`;
      const env = { ...process.env };
      for (const e of params.env ?? []) env[e.name] = e.value;
      const child = spawn(params.command, params.args ?? [], {
        cwd: params.cwd ?? cwd,
        env,
        stdio: ["ignore", "pipe", "pipe"],
      });
      children.push(child);
      const t = { params, child, output: "", exit: null, killed: false, released: false };
      t.exited = new Promise((resolve) =>
        child.on("exit", (code, sig) => {
          t.exit = { exitCode: code, signal: sig };
          resolve(t.exit);
        }),
      );
      child.stdout.on("data", (d) => (t.output += d));
      child.stderr.on("data", (d) => (t.output += d));
      state.terminals.set(id, t);
      for (const wake of state.wakers.splice(0)) wake();
      return { terminalId: id };
    })
    .onRequest(acp.methods.client.terminal.output, async ({ params }) => {
      const t = state.terminals.get(params.terminalId);
      return { output: t.output, truncated: false, exitStatus: t.exit };
    })
    .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) =>
      state.terminals.get(params.terminalId).exited,
    )
    .onRequest(acp.methods.client.terminal.kill, async ({ params }) => {
      const t = state.terminals.get(params.terminalId);
      t.killed = true;
      t.child.kill("SIGKILL");
      return {};
    })
    .onRequest(acp.methods.client.terminal.release, async ({ params }) => {
      const t = state.terminals.get(params.terminalId);
      if (t.exit === null) t.child.kill("SIGKILL");
      t.released = true;
      return {};
    })
    .onRequest(acp.methods.client.session.requestPermission, async ({ params }) => {
      state.permissionRequests.push(params);
      for (const wake of state.wakers.splice(0)) wake();
      return state.permission(params);
    });
  const { stream, child } = mode === "stdio" ? stdioStream() : wsStream(state.raw);
  const connection = app.connect(stream);
  state.agent = connection.agent;
  state.connection = connection;
  state.child = child;
  state.updatesOf = (sid) => state.updates.get(sid) ?? [];
  state.waitFor = async (pred, what) => {
    const deadline = Date.now() + LIVENESS_MS;
    while (!pred()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => {
        state.wakers.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  };
  const init = await withTimeout(
    state.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: fs, writeTextFile: fs }, terminal },
      clientInfo: { name: "conformance", version: "1" },
    }),
    LIVENESS_MS,
    "initialize",
  );
  state.init = init;
  return state;
}

const text = (t) => [{ type: "text", text: t }];

async function newSession(c) {
  return withTimeout(
    c.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] }),
    LIVENESS_MS,
    "session/new",
  );
}

function prompt(c, sessionId, t) {
  return withTimeout(
    c.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: text(t) }),
    LIVENESS_MS,
    `prompt ${t}`,
  );
}

function cancel(c, sessionId) {
  return c.agent.notify(acp.methods.agent.session.cancel, { sessionId });
}

function chunks(updates, kind) {
  return updates
    .filter((u) => u.sessionUpdate === kind)
    .map((u) => u.content.text)
    .join("");
}

async function check(name, fn) {
  try {
    const detail = await withTimeout(Promise.resolve().then(fn), LIVENESS_MS * 2, name);
    report(name, true, detail ?? null);
  } catch (err) {
    report(name, false, String(err?.stack ?? err));
  }
}

function assert(cond, message) {
  if (!cond) throw new Error(message);
}

// --- the checks -------------------------------------------------------------------------

async function common(c) {
  const shared = {};
  await check("initialize", async () => {
    assert(c.init.protocolVersion === 1, `protocolVersion ${c.init.protocolVersion}`);
    assert(c.init.agentCapabilities.loadSession === true, "loadSession not advertised");
    return c.init.agentCapabilities;
  });

  await check("new_and_prompt_streams_text_and_thought", async () => {
    const s = await newSession(c);
    shared.hello = s.sessionId;
    assert(s.modes && s.modes.currentModeId, "no modes in session/new");
    const res = await prompt(c, s.sessionId, "say hello");
    assert(res.stopReason === "end_turn", `stopReason ${res.stopReason}`);
    const ups = c.updatesOf(s.sessionId);
    const said = chunks(ups, "agent_message_chunk");
    assert(said === "Hello from the fake model.", `text ${JSON.stringify(said)}`);
    assert(chunks(ups, "agent_thought_chunk") === "Let me think.", "thought chunks");
    assert(
      ups.some((u) => u.sessionUpdate === "available_commands_update"),
      "no available_commands_update",
    );
    return { updates: ups.length };
  });

  await check("prompt_with_tool_reports_tool_call_and_result", async () => {
    const s = await newSession(c);
    const res = await prompt(c, s.sessionId, "use a tool");
    assert(res.stopReason === "end_turn", `stopReason ${res.stopReason}`);
    const ups = c.updatesOf(s.sessionId);
    const call = ups.find((u) => u.sessionUpdate === "tool_call");
    assert(call, "no tool_call");
    const updates = ups.filter(
      (u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId,
    );
    assert(
      updates.some((u) => u.status === "in_progress" && u.kind === "execute"),
      "no in_progress",
    );
    const last = updates.at(-1);
    assert(last.status === "completed", `final status ${last.status}`);
    assert(JSON.stringify(last.content).includes("tool-output"), "output missing");
    assert(chunks(ups, "agent_message_chunk").includes("The tool said"), "final text");
  });

  for (const [answer, expected] of [
    ["allow_once", "end_turn"],
    ["deny", "end_turn"],
    ["cancelled", "cancelled"],
  ]) {
    await check(`permission_${answer}`, async () => {
      const s = await newSession(c);
      await c.agent.request(acp.methods.agent.session.setMode, {
        sessionId: s.sessionId,
        modeId: "default",
      });
      const asked = c.permissionRequests.length;
      c.permission = async () =>
        answer === "cancelled"
          ? { outcome: { outcome: "cancelled" } }
          : { outcome: { outcome: "selected", optionId: answer } };
      const res = await prompt(c, s.sessionId, "use a tool");
      assert(c.permissionRequests.length === asked + 1, "no permission request");
      assert(res.stopReason === expected, `stopReason ${res.stopReason}`);
      const ups = c.updatesOf(s.sessionId);
      assert(
        ups.some((u) => u.sessionUpdate === "current_mode_update" && u.currentModeId === "default"),
        "no current_mode_update",
      );
      const done = ups.filter((u) => u.sessionUpdate === "tool_call_update" && u.rawOutput).at(-1);
      const status = done?.rawOutput?.status;
      const want = { allow_once: "ok", deny: "denied", cancelled: "cancelled" }[answer];
      assert(status === want, `tool status ${status}`);
    });
  }
  c.permission = async () => ({ outcome: { outcome: "selected", optionId: "allow_once" } });

  await check("cancel_before_any_output", async () => {
    const s = await newSession(c);
    const pending = prompt(c, s.sessionId, "think slowly");
    await cancel(c, s.sessionId);
    const res = await pending;
    assert(res.stopReason === "cancelled", `stopReason ${res.stopReason}`);
    const said = chunks(c.updatesOf(s.sessionId), "agent_message_chunk");
    assert(said === "", `output before cancel: ${said}`);
    // The session is usable afterwards, and the next prompt gets its own stop reason.
    const next = await prompt(c, s.sessionId, "say hello");
    assert(next.stopReason === "end_turn", `next stopReason ${next.stopReason}`);
  });

  await check("cancel_mid_tool", async () => {
    const s = await newSession(c);
    const pending = prompt(c, s.sessionId, "sleep a while");
    await c.waitFor(
      () => c.updatesOf(s.sessionId).some((u) => u.status === "in_progress"),
      "tool in progress",
    );
    await cancel(c, s.sessionId);
    const res = await pending;
    assert(res.stopReason === "cancelled", `stopReason ${res.stopReason}`);
    const done = c
      .updatesOf(s.sessionId)
      .filter((u) => u.sessionUpdate === "tool_call_update" && u.rawOutput)
      .at(-1);
    assert(done.status === "failed", `status ${done.status}`);
    assert(
      done.rawOutput.status === "cancelled" && done.rawOutput.started === true,
      "not cancelled",
    );
  });

  await check("new_prompt_cancels_running_one", async () => {
    const s = await newSession(c);
    const first = prompt(c, s.sessionId, "sleep a while");
    await c.waitFor(
      () => c.updatesOf(s.sessionId).some((u) => u.status === "in_progress"),
      "tool in progress",
    );
    const second = prompt(c, s.sessionId, "say hello");
    const [a, b] = await Promise.all([first, second]);
    assert(a.stopReason === "cancelled", `first ${a.stopReason}`);
    assert(b.stopReason === "end_turn", `second ${b.stopReason}`);
  });

  await check("plan_usage_and_config_options", async () => {
    const s = await newSession(c);
    const model = s.configOptions.find((o) => o.id === "model");
    assert(model && model.currentValue, "no model config option");
    const set = await c.agent.request(acp.methods.agent.session.setConfigOption, {
      sessionId: s.sessionId,
      configId: "mode",
      value: "accept-edits",
    });
    const mode = set.configOptions.find((o) => o.id === "mode");
    assert(mode.currentValue === "accept-edits", `mode ${mode.currentValue}`);
    const res = await prompt(c, s.sessionId, "make a plan");
    assert(res.stopReason === "end_turn", `stopReason ${res.stopReason}`);
    const ups = c.updatesOf(s.sessionId);
    assert(
      ups.some((u) => u.sessionUpdate === "current_mode_update" && u.currentModeId === "accept-edits"),
      "no current_mode_update for the config option",
    );
    const plan = ups.find((u) => u.sessionUpdate === "plan");
    assert(plan, "no plan update");
    assert(
      JSON.stringify(plan.entries.map((e) => [e.content, e.status])) ===
        JSON.stringify([
          ["read the code", "completed"],
          ["fix the bug", "in_progress"],
        ]),
      `plan ${JSON.stringify(plan.entries)}`,
    );
    const usage = ups.find((u) => u.sessionUpdate === "usage_update");
    assert(usage && usage.size > 0 && usage.used > 0, "no usage_update");
  });

  await check("delete_session", async () => {
    const s = await newSession(c);
    await c.agent.request(acp.methods.agent.session.delete, { sessionId: s.sessionId });
    const res = await c.agent.request(acp.methods.agent.session.list, { cwd });
    assert(!res.sessions.some((x) => x.sessionId === s.sessionId), "deleted session listed");
    let err;
    try {
      await prompt(c, s.sessionId, "say hello");
    } catch (e) {
      err = e;
    }
    assert(err && err.code === -32002, `prompt after delete: ${err}`);
  });

  await check("list_sessions", async () => {
    const res = await c.agent.request(acp.methods.agent.session.list, { cwd });
    assert(Array.isArray(res.sessions), "no sessions array");
    assert(
      res.sessions.some((x) => x.sessionId === shared.hello && x.cwd === cwd),
      "session missing from list",
    );
    return { count: res.sessions.length };
  });

  await check("close_cancels_running_prompt", async () => {
    const s = await newSession(c);
    const pending = prompt(c, s.sessionId, "sleep a while");
    await c.waitFor(
      () => c.updatesOf(s.sessionId).some((u) => u.status === "in_progress"),
      "tool in progress",
    );
    await c.agent.request(acp.methods.agent.session.close, { sessionId: s.sessionId });
    const res = await pending;
    assert(res.stopReason === "cancelled", `stopReason ${res.stopReason}`);
    let err;
    try {
      await prompt(c, s.sessionId, "say hello");
    } catch (e) {
      err = e;
    }
    assert(err && err.code === -32002, `prompt after close: ${err}`);
  });
  return shared;
}

async function loadChecks(c, sessionId, label) {
  await check(`load_replays_history_${label}`, async () => {
    const before = c.updatesOf(sessionId).length;
    await withTimeout(
      c.agent.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] }),
      LIVENESS_MS,
      "session/load",
    );
    // (The order — replay before the response — is checked on the raw wire in Python.)
    await c.waitFor(
      () =>
        c
          .updatesOf(sessionId)
          .slice(before)
          .some((u) => u.sessionUpdate === "agent_message_chunk"),
      "the replay",
    );
    const ups = c.updatesOf(sessionId).slice(before);
    const user = ups.find((u) => u.sessionUpdate === "user_message_chunk");
    assert(user && user.content.text === "say hello", "user message not replayed");
    const said = ups.find((u) => u.sessionUpdate === "agent_message_chunk");
    assert(
      said && said.content.text === "Hello from the fake model.",
      `reply not replayed: ${JSON.stringify(ups)}`,
    );
    assert(said.messageId && user.messageId && said.messageId !== user.messageId, "message ids");
  });

  await check(`cancel_right_after_load_${label}`, async () => {
    const pending = prompt(c, sessionId, "think slowly");
    await cancel(c, sessionId);
    const res = await pending;
    assert(res.stopReason === "cancelled", `stopReason ${res.stopReason}`);
  });
}

async function fsChecks(e) {
  await check("fs_read_goes_through_the_editor", async () => {
    const s = await newSession(e);
    const res = await prompt(e, s.sessionId, "read the buffer");
    assert(res.stopReason === "end_turn", `stopReason ${res.stopReason}`);
    assert(e.reads.length === 1 && e.reads[0].path === `${cwd}/notes.txt`, "no fs read");
    const done = e.updatesOf(s.sessionId).filter((u) => u.rawOutput).at(-1);
    assert(JSON.stringify(done.content).includes("EDITOR BUFFER"), "buffer not used");
  });
  await check("fs_write_goes_through_the_editor", async () => {
    const s = await newSession(e);
    const res = await prompt(e, s.sessionId, "write the buffer");
    assert(res.stopReason === "end_turn", `stopReason ${res.stopReason}`);
    const w = e.writes.at(-1);
    assert(w && w.path === `${cwd}/new.txt`, "no fs write");
    assert(w.content === "from the agent\n", `content ${JSON.stringify(w?.content)}`);
    assert(!existsSync(`${cwd}/new.txt`), "written to disk, not to the editor");
    const done = e.updatesOf(s.sessionId).filter((u) => u.rawOutput).at(-1);
    assert(done.status === "completed", `status ${done.status}`);
    assert(done.content.some((c) => c.type === "diff"), "no diff");
  });
}

async function terminalChecks(e) {
  await check("terminal_runs_commands_in_the_editor", async () => {
    const s = await newSession(e);
    const res = await prompt(e, s.sessionId, "use a tool");
    assert(res.stopReason === "end_turn", `stopReason ${res.stopReason}`);
    const [t] = [...e.terminals.values()];
    assert(t && t.params.args.join(" ").includes("echo tool-output"), "no terminal/create");
    assert(t.released, "terminal not released");
    const ups = e.updatesOf(s.sessionId);
    assert(
      ups.some((u) => u.content?.some((c) => c.type === "terminal")),
      "terminal not shown in the tool call",
    );
    const done = ups.filter((u) => u.rawOutput).at(-1);
    assert(done.status === "completed", `status ${done.status}`);
    assert(JSON.stringify(done.content).includes("tool-output"), "output missing");
  });
  await check("terminal_cancel_kills_and_releases", async () => {
    const s = await newSession(e);
    const before = e.terminals.size;
    const pending = prompt(e, s.sessionId, "sleep a while");
    await e.waitFor(() => e.terminals.size > before, "terminal/create");
    const t = [...e.terminals.values()].at(-1);
    await cancel(e, s.sessionId);
    const res = await pending;
    assert(res.stopReason === "cancelled", `stopReason ${res.stopReason}`);
    assert(t.killed && t.released && t.exit !== null, "terminal not killed and released");
    const done = e.updatesOf(s.sessionId).filter((u) => u.rawOutput).at(-1);
    assert(done.rawOutput.status === "cancelled", `status ${done.rawOutput.status}`);
    assert(done.rawOutput.started === true, "cancelled call not reported as started");
  });
}

async function mcpCheck(e) {
  // The client's server is named "t" over both transports: the model calls mcp__t__add.
  const addsWith = async (server, what) => {
    const s = await withTimeout(
      e.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [server] }),
      LIVENESS_MS,
      `session/new with ${what}`,
    );
    const res = await prompt(e, s.sessionId, "add with mcp");
    assert(res.stopReason === "end_turn", `stopReason ${res.stopReason}`);
    const done = e.updatesOf(s.sessionId).filter((u) => u.rawOutput).at(-1);
    assert(done.status === "completed", `status ${done.status}: ${JSON.stringify(done)}`);
    assert(JSON.stringify(done.content).includes("42"), `content ${JSON.stringify(done.content)}`);
  };
  await check("mcp_server_from_the_client", async () => {
    const [command, ...args] = JSON.parse(process.env.ACP_MCP_SERVER);
    await addsWith({ name: "t", command, args, env: [] }, "a stdio MCP server");
  });
  await check("mcp_http_server_from_the_client", async () => {
    const url = process.env.ACP_MCP_HTTP_URL;
    await addsWith({ type: "http", name: "t", url, headers: [] }, "an HTTP MCP server");
  });
}

async function stdioMain() {
  const c = await open();
  const shared = await common(c);
  await loadChecks(c, shared.hello, "same_process");
  c.connection.close();
  c.child.stdin.end();
  await new Promise((resolve) => c.child.once("exit", resolve));
  // A new process: the history comes from the store. Its client edits through its
  // buffers and runs commands in its terminals.
  const d = await open({ fs: true, terminal: true });
  await loadChecks(d, shared.hello, "new_process");
  await fsChecks(d);
  await terminalChecks(d);
  await mcpCheck(d);
  d.connection.close();
  d.child.stdin.end();
  await new Promise((resolve) => d.child.once("exit", resolve));
}

async function wsMain() {
  const c = await open();
  const shared = await common(c);
  const d = await open();
  await loadChecks(d, shared.hello, "other_connection");

  await check("two_connections_share_a_session", async () => {
    const other = await open();
    try {
      const s = await newSession(c);
      await other.agent.request(acp.methods.agent.session.resume, {
        sessionId: s.sessionId,
        cwd,
        mcpServers: [],
      });
      const res = await prompt(c, s.sessionId, "say hello");
      assert(res.stopReason === "end_turn", `stopReason ${res.stopReason}`);
      await other.waitFor(
        () =>
          chunks(other.updatesOf(s.sessionId), "agent_message_chunk") ===
          "Hello from the fake model.",
        "the reply on the other connection",
      );
      const user = chunks(other.updatesOf(s.sessionId), "user_message_chunk");
      assert(user === "say hello", `the other connection saw the prompt as ${user}`);
      assert(
        chunks(c.updatesOf(s.sessionId), "user_message_chunk") === "",
        "the prompter got its own message back",
      );
    } finally {
      other.connection.close();
    }
  });


  await check("reconnect_mid_turn_keeps_updates", async () => {
    const a = await open();
    const s = await newSession(a);
    const pending = prompt(a, s.sessionId, "stream slowly").catch((e) => e);
    await a.waitFor(
      () => chunks(a.updatesOf(s.sessionId), "agent_message_chunk").length > 0,
      "first chunk",
    );
    a.raw.socket.terminate(); // the editor's connection drops mid-turn
    await pending;
    const b = await open();
    await b.agent.request(acp.methods.agent.session.load, {
      sessionId: s.sessionId,
      cwd,
      mcpServers: [],
    });
    const full = "one two three four five six seven eight";
    await b.waitFor(
      () => chunks(b.updatesOf(s.sessionId), "agent_message_chunk").endsWith(full),
      "the rest of the reply",
    );
    const said = chunks(b.updatesOf(s.sessionId), "agent_message_chunk");
    assert(said === full, `reply seen after reconnect ${JSON.stringify(said)}`);
    const next = await prompt(b, s.sessionId, "say hello");
    assert(next.stopReason === "end_turn", `next ${next.stopReason}`);
    b.connection.close();
  });

  await check("permission_resent_to_next_connection", async () => {
    const a = await open();
    const s = await newSession(a);
    await a.agent.request(acp.methods.agent.session.setMode, {
      sessionId: s.sessionId,
      modeId: "default",
    });
    let release;
    a.permission = () => new Promise((resolve) => (release = resolve)); // never answered
    const pending = prompt(a, s.sessionId, "use a tool").catch((e) => e);
    await a.waitFor(() => a.permissionRequests.length === 1, "permission request on a");
    a.raw.socket.terminate();
    await pending;
    const b = await open();
    await b.agent.request(acp.methods.agent.session.resume, {
      sessionId: s.sessionId,
      cwd,
      mcpServers: [],
    });
    await b.waitFor(() => b.permissionRequests.length === 1, "permission re-sent to b");
    await b.waitFor(
      () => chunks(b.updatesOf(s.sessionId), "agent_message_chunk").includes("The tool said"),
      "the turn finished after b allowed",
    );
    release?.({ outcome: { outcome: "cancelled" } });
    b.connection.close();
  });
  c.connection.close();
  d.connection.close();
}

try {
  if (mode === "stdio") await stdioMain();
  else if (mode === "ws") await wsMain();
  else throw new Error(`usage: conformance.mjs stdio|ws (got ${mode})`);
} catch (err) {
  report("driver", false, String(err?.stack ?? err));
} finally {
  for (const child of children) if (child.exitCode === null) child.kill("SIGTERM");
}
process.exit(0);
