// An ACP client built on the official TypeScript SDK (@agentclientprotocol/sdk,
// pinned in package.json / package-lock.json), driving `arbor acp` for
// tests/all/acp.rs.
//
// usage: node client.mjs ARBOR_BINARY CWD [--no-subagents] [--load=SESSION_ID]
//        [--resume=SESSION_ID] [--set=CONFIG_ID=VALUE]... [--list] [--close]
//        [--cancel=TEXT] [--mcp-stdio=NAME=COMMAND] PROMPT...
//
// Starts `ARBOR_BINARY acp` (its environment is this process's), initializes
// (advertising `subagents` unless --no-subagents), opens a new session in CWD (or
// loads SESSION_ID with session/load, its replay logged like any update, or resumes
// it with session/resume), sets each --set config option in turn
// (session/set_config_option), sends each PROMPT in turn and answers every
// permission request with allow-once. With --list, then lists CWD's sessions with
// session/list, following nextCursor to the last page. With --close, then closes
// the session (session/close) and sends one more prompt, whose error is kept.
// Prints one JSON object: {initialize, sessionId, opened (the new/load/resume
// answer), set: [answer or {error}], turns: [{stopReason}], pages: [session/list
// answers], afterClose: {error}, log: [...]}, where
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
const resume = flags.find((a) => a.startsWith("--resume="))?.slice("--resume=".length);
const sets = flags
  .filter((a) => a.startsWith("--set="))
  .map((a) => a.slice("--set=".length))
  .map((spec) => [spec.slice(0, spec.indexOf("=")), spec.slice(spec.indexOf("=") + 1)]);
const list = flags.includes("--list");
const close = flags.includes("--close");
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
  let sessionId = load ?? resume;
  let opened;
  if (load) {
    opened = await ctx.request(methods.agent.session.load, { sessionId: load, cwd, mcpServers });
    log.push({ kind: "loaded" });
  } else if (resume) {
    opened = await ctx.request(methods.agent.session.resume, { sessionId: resume, cwd, mcpServers });
    log.push({ kind: "resumed" });
  } else {
    opened = await ctx.request(methods.agent.session.new, { cwd, mcpServers });
    ({ sessionId } = opened);
  }
  const set = [];
  for (const [configId, value] of sets) {
    try {
      set.push(await ctx.request(methods.agent.session.setConfigOption, { sessionId, configId, value }));
    } catch (error) {
      set.push({ error: error.message ?? String(error) });
    }
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
  const pages = [];
  if (list) {
    let cursor;
    do {
      const page = await ctx.request(methods.agent.session.list, cursor ? { cwd, cursor } : { cwd });
      pages.push(page);
      cursor = page.nextCursor;
    } while (cursor && pages.length < 20);
  }
  let afterClose;
  if (close) {
    await ctx.request(methods.agent.session.close, { sessionId });
    log.push({ kind: "closed" });
    try {
      await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "after close" }] });
      afterClose = { error: null };
    } catch (error) {
      afterClose = { error: error.message ?? String(error) };
    }
  }
  return { initialize, sessionId, opened, set, turns, pages, afterClose, log };
});

agent.stdin.end();
process.stdout.write(JSON.stringify(result) + "\n");
await new Promise((resolve) => agent.on("exit", resolve));
process.exit(0);
