// A small scripted ACP v1 agent for tests/all/hosted.rs (issue 37 item 3): what arbor
// does with an agent's permission requests, fs and terminal calls, a crash and a
// refused `initialize`. The real agent of the "done" test is codex-acp; this one only
// covers the client side's edges. Usage: node fake_agent.mjs <mode>
//   answer      streams a thought, a plan, a tool call and its result, then the answer
//   permission  asks to run `rm -rf build` (kind execute), answers with the option chosen
//   fs          writes and reads a file in its cwd, then reads and writes outside it
//   terminal    runs `echo from-terminal` in a terminal and answers with its output
//   slow        answers "work" only once a file `release` exists in its cwd, others at
//               once; each answer names how many sessions it opened (one per node)
//   hold        streams "holding" and waits for session/cancel, then answers cancelled
//   resumable   answers naming its ACP session and how many it opened; `session/load`
//               replays "replayed history" before answering
//   whoami      answers with the auth method arbor authenticated with ("none")
//   crash       writes to stderr and exits 3 when prompted
//   refuse      answers `initialize` with an error
import { createInterface } from "node:readline";
import path from "node:path";
import fs from "node:fs";

const mode = process.argv[2] ?? "answer";
let cwd = process.cwd();
let nextId = 1000;
let sessions = 0;
let onCancel = null;
let authenticated = "none";
const waiting = new Map();

const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...m }) + "\n");
const request = (method, params) =>
  new Promise((resolve) => {
    const id = nextId++;
    waiting.set(id, resolve);
    send({ id, method, params });
  });
const update = (sessionId, u) => send({ method: "session/update", params: { sessionId, update: u } });
const say = (sessionId, text) =>
  update(sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
const outcome = (r) => (r.error ? `error: ${r.error.message}` : JSON.stringify(r.result));

async function prompt(id, params) {
  const sid = params.sessionId;
  const text = params.prompt.map((b) => b.text ?? "").join("");
  if (mode === "crash") {
    process.stderr.write("fatal: the fake model exploded\n");
    process.exit(3);
  }
  if (mode === "slow") {
    say(sid, `working on: ${text}. `);
    if (text === "work") {
      while (!fs.existsSync(path.join(cwd, "release"))) {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    say(sid, `done: ${text} (sessions opened: ${sessions})`);
  }
  if (mode === "resumable") {
    say(sid, `answer in ${sid} (sessions opened: ${sessions})`);
  }
  if (mode === "whoami") {
    say(sid, `authenticated with: ${authenticated}`);
  }
  if (mode === "hold") {
    say(sid, "holding. ");
    await new Promise((resolve) => (onCancel = resolve));
    say(sid, "stopped by cancel");
    send({ id, result: { stopReason: "cancelled" } });
    return;
  }
  if (mode === "answer") {
    update(sid, { sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "thinking it over" } });
    update(sid, {
      sessionUpdate: "plan",
      entries: [{ content: "Read the task", priority: "high", status: "completed" }, { content: "Answer", priority: "high", status: "in_progress" }],
    });
    update(sid, { sessionUpdate: "tool_call", toolCallId: "t1", title: "Look around", kind: "read", status: "in_progress", rawInput: { path: "." } });
    update(sid, {
      sessionUpdate: "tool_call_update", toolCallId: "t1", status: "completed",
      content: [{ type: "content", content: { type: "text", text: "looked: nothing odd" } }],
    });
    update(sid, {
      sessionUpdate: "tool_call", toolCallId: "t2", title: "Edit notes.md", kind: "edit", status: "completed",
      content: [{ type: "diff", path: path.join(cwd, "notes.md"), oldText: "a\n", newText: "a\nb\n" }],
    });
    update(sid, { sessionUpdate: "usage_update", used: 100, size: 1000, cost: { amount: 0.25, currency: "USD" } });
    say(sid, `fake answer to: ${text}`);
    send({ id, result: { stopReason: "end_turn", usage: { inputTokens: 11, outputTokens: 5, totalTokens: 16 } } });
    return;
  }
  if (mode === "permission") {
    const r = await request("session/request_permission", {
      sessionId: sid,
      toolCall: { toolCallId: "p1", title: "rm -rf build", kind: "execute", rawInput: { command: ["bash", "-lc", "rm -rf build"] } },
      options: [
        { optionId: "yes-once", name: "Allow", kind: "allow_once" },
        { optionId: "no-once", name: "Reject", kind: "reject_once" },
      ],
    });
    say(sid, `permission outcome: ${outcome(r)}`);
  }
  if (mode === "fs") {
    const inside = path.join(cwd, "hosted-note.txt");
    const outsideDir = path.dirname(cwd);
    const w1 = await request("fs/write_text_file", { sessionId: sid, path: inside, content: "written by the hosted agent\n" });
    const r1 = await request("fs/read_text_file", { sessionId: sid, path: inside });
    const r2 = await request("fs/read_text_file", { sessionId: sid, path: path.join(outsideDir, "secret.txt") });
    const w2 = await request("fs/write_text_file", { sessionId: sid, path: path.join(outsideDir, "escaped.txt"), content: "x" });
    say(sid, [`cwd: ${cwd}`, `write inside: ${outcome(w1)}`, `read inside: ${outcome(r1)}`, `read outside: ${outcome(r2)}`, `write outside: ${outcome(w2)}`].join("\n"));
  }
  if (mode === "terminal") {
    const c = await request("terminal/create", { sessionId: sid, command: "echo", args: ["from-terminal"] });
    const terminalId = c.result.terminalId;
    const w = await request("terminal/wait_for_exit", { sessionId: sid, terminalId });
    const o = await request("terminal/output", { sessionId: sid, terminalId });
    await request("terminal/release", { sessionId: sid, terminalId });
    say(sid, `terminal exit: ${outcome(w)} output: ${outcome(o)}`);
  }
  send({ id, result: { stopReason: "end_turn" } });
}

createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === undefined) {
    const resolve = waiting.get(m.id);
    waiting.delete(m.id);
    resolve?.(m);
    return;
  }
  if (m.method === "initialize") {
    if (mode === "refuse") {
      process.stderr.write("fake agent: this client is not supported\n");
      send({ id: m.id, error: { code: -32000, message: "unsupported client: fake agent refuses arbor" } });
      return;
    }
    const fs = m.params.clientCapabilities?.fs ?? {};
    if (!fs.readTextFile || !fs.writeTextFile || !m.params.clientCapabilities?.terminal) {
      send({ id: m.id, error: { code: -32000, message: "the client must offer fs and terminal" } });
      return;
    }
    send({ id: m.id, result: { protocolVersion: 1, agentCapabilities: { loadSession: true }, authMethods: [
      { id: "fake-login", name: "Log in" },
      { id: "fake-key", name: "Key", type: "env_var", vars: [{ name: "FAKE_AGENT_KEY" }] },
    ], agentInfo: { name: "fake-agent", version: "1.0.0" } } });
  } else if (m.method === "session/new") {
    cwd = m.params.cwd;
    sessions += 1;
    send({ id: m.id, result: { sessionId: `fake-session-${sessions}` } });
  } else if (m.method === "authenticate") {
    authenticated = m.params.methodId;
    send({ id: m.id, result: {} });
  } else if (m.method === "session/load") {
    cwd = m.params.cwd;
    say(m.params.sessionId, "replayed history");
    send({ id: m.id, result: {} });
  } else if (m.method === "session/prompt") {
    prompt(m.id, m.params);
  } else if (m.method === "session/cancel") {
    onCancel?.();
  } else if (m.id !== undefined) {
    send({ id: m.id, error: { code: -32601, message: `no ${m.method}` } });
  }
});
