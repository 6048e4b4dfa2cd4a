// An ACP client built on the official TypeScript SDK (@agentclientprotocol/sdk,
// pinned in package.json / package-lock.json), driving `arbor acp` for
// tests/all/acp.rs.
//
// usage: node client.mjs ARBOR_BINARY CWD [--no-subagents] [--load=SESSION_ID]
//        [--cancel=TEXT] [--mcp-stdio=NAME=COMMAND] PROMPT...
//
// Starts `ARBOR_BINARY acp` (its environment is this process's), initializes
// (advertising `subagents` unless --no-subagents), opens a new session in CWD (or
// loads SESSION_ID with session/load, its replay logged like any update), sends each
// PROMPT in turn and answers every permission request with allow-once. Prints one
// JSON object: {initialize, sessionId, turns: [{stopReason}], log: [...]}, where
// `log` holds every session/update (`{kind: "update", sessionId, update}`) and
// permission request (`{kind: "permission", request}`) in arrival order, with
// `{kind: "turn_end", stopReason}` after each prompt's answer. With --cancel=TEXT,
// the first subagent session whose title contains TEXT is cancelled (session/cancel
// with its own id, logged as `{kind: "cancel", sessionId}`) once it streams.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk/unstable";

const [binary, cwd, ...rest] = process.argv.slice(2);
const flags = rest.filter((a) => a.startsWith("--"));
const prompts = rest.filter((a) => !a.startsWith("--"));
const subagents = !flags.includes("--no-subagents");
const load = flags.find((a) => a.startsWith("--load="))?.slice("--load=".length);
const cancelTitle = flags.find((a) => a.startsWith("--cancel="))?.slice("--cancel=".length);
const mcpServers = flags
  .filter((a) => a.startsWith("--mcp-stdio="))
  .map((a) => a.slice("--mcp-stdio=".length))
  .map((spec) => {
    const at = spec.indexOf("=");
    return { name: spec.slice(0, at), command: spec.slice(at + 1), args: [], env: [] };
  });
let connection;
let toCancel;
let cancelled = false;

const agent = spawn(binary, ["acp"], { stdio: ["pipe", "pipe", "inherit"] });
const stream = ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

const log = [];
const app = client({ name: "arbor-acp-test" })
  .onNotification(methods.client.session.update, ({ params }) => {
    log.push({ kind: "update", sessionId: params.sessionId, update: params.update });
    const update = params.update;
    if (
      cancelTitle &&
      !toCancel &&
      update.sessionUpdate === "subagent_update" &&
      (update.title ?? "").includes(cancelTitle)
    ) {
      toCancel = update.sessionId;
    }
    if (!cancelled && toCancel && params.sessionId === toCancel && update.sessionUpdate === "agent_message_chunk") {
      cancelled = true;
      log.push({ kind: "cancel", sessionId: toCancel });
      void connection.notify(methods.agent.session.cancel, { sessionId: toCancel });
    }
  })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    log.push({ kind: "permission", request: params });
    return { outcome: { outcome: "selected", optionId: "allow-once" } };
  });

const result = await app.connectWith(stream, async (ctx) => {
  connection = ctx;
  const initialize = await ctx.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: subagents ? { subagents: {} } : {},
    clientInfo: { name: "arbor-acp-test", version: "1" },
  });
  let sessionId = load;
  if (load) {
    await ctx.request(methods.agent.session.load, { sessionId: load, cwd, mcpServers });
    log.push({ kind: "loaded" });
  } else {
    ({ sessionId } = await ctx.request(methods.agent.session.new, { cwd, mcpServers }));
  }
  const turns = [];
  for (const text of prompts) {
    const answer = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text }],
    });
    log.push({ kind: "turn_end", stopReason: answer.stopReason });
    turns.push({ stopReason: answer.stopReason });
  }
  return { initialize, sessionId, turns, log };
});

agent.stdin.end();
process.stdout.write(JSON.stringify(result) + "\n");
await new Promise((resolve) => agent.on("exit", resolve));
process.exit(0);
