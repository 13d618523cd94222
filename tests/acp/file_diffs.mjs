// The official TypeScript ACP SDK as the client of `rawtrio acp` on stdio: one prompt whose
// `bash` call changes files; prints the call's final `tool_call_update` as one JSON line.
// The SDK parses every `session/update` against the ACP schema (zod) before handing it over
// and drops content blocks that do not match it, so a malformed `diff` would be missing here.
//
//   node file_diffs.mjs   (env ACP_CMD: JSON argv of `rawtrio acp`, ACP_CWD, ACP_PROMPT)
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const LIVENESS_MS = 60_000;
const argv = JSON.parse(process.env.ACP_CMD);
const child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const updates = [];
const app = acp
  .client({ name: "rawtrio-file-diffs" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  });
const timer = setTimeout(() => {
  process.stdout.write(JSON.stringify({ error: "timed out" }) + "\n");
  child.kill("SIGKILL");
  process.exit(1);
}, LIVENESS_MS);
try {
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const { agent } = app.connect(stream);
  await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "file-diffs", version: "1" },
  });
  const s = await agent.request(acp.methods.agent.session.new, {
    cwd: process.env.ACP_CWD,
    mcpServers: [],
  });
  const res = await agent.request(acp.methods.agent.session.prompt, {
    sessionId: s.sessionId,
    prompt: [{ type: "text", text: process.env.ACP_PROMPT }],
  });
  const done = updates.filter((u) => u.sessionUpdate === "tool_call_update" && u.rawOutput);
  process.stdout.write(JSON.stringify({ stopReason: res.stopReason, done }) + "\n");
} catch (err) {
  process.stdout.write(JSON.stringify({ error: String(err?.stack ?? err) }) + "\n");
} finally {
  clearTimeout(timer);
  child.stdin.end();
  if (child.exitCode === null) child.kill("SIGTERM");
}
process.exit(0);
