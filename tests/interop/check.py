"""Cross-checks arbor against Amplifier's real code (issue 11 item 6); run by run.sh.

arbor -> Amplifier: a tree arbor wrote is loaded by amplifier-app-cli's SessionStore,
its root's bundle URI by foundation's load_bundle (the resume path's loader), its
child's stored config by AmplifierSession and foundation's delegate tool, and its
events by the keys Amplifier's hooks read.
Amplifier -> arbor: a tree saved by Amplifier's SessionStore, shaped as main.py and
session_spawner.py write it, is listed, shown and resumed by arbor.
foundation: arbor's `delegate` lists the agents exactly as foundation's DelegateTool.
fork: a fork arbor made (`session fork --at-turn`) opens in Amplifier's SessionStore with
foundation's slice of the transcript and lineage; a fork foundation made resumes in arbor.
"""

import argparse
import asyncio
import http.server
import json
import logging
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

logging.basicConfig(level=logging.ERROR)

RESULTS: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> bool:
    RESULTS.append((name, ok, detail))
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail and not ok else ''}")
    return ok


# ---- a scripted OpenAI-compatible server on 127.0.0.1 ----------------------------


def chunk(delta, finish=None):
    c = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "stub-model",
         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(c)}\n\n"


def sse_text(text):
    return (chunk({"role": "assistant", "content": ""}) + chunk({"content": text})
            + chunk({}, "stop") + "data: [DONE]\n\n")


def sse_tool_call(call_id, name, args):
    return (chunk({"role": "assistant", "content": None})
            + chunk({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                     "function": {"name": name, "arguments": json.dumps(args)}}]})
            + chunk({}, "tool_calls") + "data: [DONE]\n\n")


class Stub:
    def __init__(self):
        self.replies: list[str] = []
        self.requests: list[dict] = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                body = json.dumps({"object": "list", "data": [{"id": "stub-model", "object": "model"}]})
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(body.encode())

            def do_POST(self):
                n = int(self.headers.get("content-length", 0))
                stub.requests.append(json.loads(self.rfile.read(n) or b"{}"))
                reply = stub.replies.pop(0) if stub.replies else sse_text("(no more replies)")
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                self.wfile.write(reply.encode())

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


# ---- arbor in a temp home --------------------------------------------------------


class Arbor:
    def __init__(self, binary, root: Path, stub: Stub):
        self.binary = binary
        self.home = root / "home"
        self.amp_home = root / "amplifier"
        self.project = (root / "project")
        for d in (self.home, self.amp_home, self.project):
            d.mkdir(parents=True, exist_ok=True)
        self.project = self.project.resolve()
        self.config = root / "config.yaml"
        self.config.write_text(
            "providers:\n  - module: provider-openai\n    config:\n"
            f"      base_url: \"{stub.base_url}\"\n      api_key: sk-interop\n"
            "      default_model: stub-model\n")

    def env(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OPENAI_", "ANTHROPIC_", "XDG_"))}
        env.update(HOME=str(self.home), AMPLIFIER_HOME=str(self.amp_home),
                   ARBOR_CONFIG=str(self.config), NO_COLOR="1")
        return env

    def run(self, *args):
        return subprocess.run([self.binary, *args], cwd=self.project, env=self.env(),
                              capture_output=True, text=True, timeout=120)

    def sessions(self) -> Path:
        slug = str(self.project).replace("/", "-").replace("\\", "-").replace(":", "")
        if not slug.startswith("-"):
            slug = "-" + slug
        return self.amp_home / "projects" / slug / "sessions"


class Coord:
    """The part of a coordinator foundation's DelegateTool reads for its description."""

    def __init__(self, config):
        self.config = config

    def get_capability(self, name):
        return None

    def get(self, name):
        return None


def agents_section(description: str) -> str:
    at = description.find("Available agents:")
    return description[at:] if at >= 0 else ""


# ---- arbor -> Amplifier ----------------------------------------------------------


def arbor_to_amplifier(args, work: Path):
    from amplifier_app_cli.session_store import SessionStore, extract_session_mode
    from amplifier_core import AmplifierSession
    from amplifier_foundation import load_bundle
    from amplifier_module_tool_delegate import DelegateTool

    stub = Stub()
    stub.replies = [sse_tool_call("call_1", "task", {"agent": "explorer", "instruction": "Map the crate"}),
                    sse_text("src/ holds lib.rs."), sse_text("Done.")]
    arbor = Arbor(args.arbor, work / "a2a", stub)
    out = arbor.run("run", "--output-format", "json", "Map it")
    if not check("arbor runs a delegating turn", out.returncode == 0, out.stderr[-400:]):
        return
    root_id = json.loads(out.stdout)["session_id"]
    store = SessionStore(base_dir=arbor.sessions())
    ids = store.list_sessions(top_level_only=False)
    child_id = next((i for i in ids if i.endswith("_explorer")), None)
    check("SessionStore lists the arbor root and child", root_id in ids and child_id is not None, str(ids))
    try:
        _, root_meta = store.load(root_id)
        transcript, child_meta = store.load(child_id)
        check("SessionStore loads both", True)
    except Exception as e:  # noqa: BLE001
        check("SessionStore loads both", False, repr(e))
        return

    bundle_name, _ = extract_session_mode(root_meta)
    check("the root names its bundle as a file:// URI", str(bundle_name).startswith("file://"), str(bundle_name))

    async def load():
        b = await load_bundle(bundle_name)
        b.load_agent_metadata()
        return b

    try:
        bundle = asyncio.run(load())
        plan = bundle.to_mount_plan()
        check("foundation's load_bundle loads the root's bundle", bundle.name == "arbor", bundle.name)
        check("... with arbor's instruction and tools",
              "You are arbor" in (plan.get("instruction") or bundle.instruction or "")
              and any(t.get("module") == "tool-task" for t in plan.get("tools", [])))
    except Exception as e:  # noqa: BLE001
        check("foundation's load_bundle loads the root's bundle", False, repr(e))

    for label, meta in (("root", root_meta), ("child", child_meta)):
        config = meta.get("config") or {}
        try:
            agents = DelegateTool(Coord(config), {})._get_agent_list()
            check(f"delegate reads the {label}'s stored agents", True)
        except Exception as e:  # noqa: BLE001
            check(f"delegate reads the {label}'s stored agents", False, repr(e))
            continue
        if label == "root":
            names = sorted(a["name"] for a in agents)
            check("the root's agents map lists arbor's agents",
                  names == ["explorer", "implementer", "researcher", "reviewer", "zen-architect"], str(names))
    try:
        AmplifierSession(config=child_meta["config"], loader=None, session_id=child_id,
                         parent_id=child_meta.get("parent_id"))
        check("AmplifierSession accepts the child's stored config (resume_sub_session)", True)
    except Exception as e:  # noqa: BLE001
        check("AmplifierSession accepts the child's stored config (resume_sub_session)", False, repr(e))

    events = [json.loads(line) for line in (arbor.sessions() / root_id / "events.jsonl").read_text().splitlines() if line.strip()]
    pre = next((e for e in events if e["event"] == "tool:pre"), {})
    post = next((e for e in events if e["event"] == "tool:post"), {})
    check("tool:pre carries tool_input (hooks-process-guard, hooks-todo-display)",
          isinstance(pre.get("data", {}).get("tool_input"), dict)
          and pre["data"]["tool_input"].get("agent") == "explorer")
    response = post.get("data", {}).get("tool_response", {})
    check("tool:post carries tool_response {success, output} (hooks-todo-display)",
          response.get("success") is True and "src/ holds lib.rs." in str(response.get("output")))


# ---- Amplifier -> arbor ----------------------------------------------------------


def amplifier_to_arbor(args, work: Path):
    from datetime import UTC, datetime

    from amplifier_app_cli.session_store import SessionStore
    from amplifier_foundation import load_bundle

    stub = Stub()
    stub.replies = [sse_text("Root again."), sse_text("Child again.")]
    arbor = Arbor(args.arbor, work / "amp2a", stub)
    store = SessionStore(base_dir=arbor.sessions())

    async def plan():
        b = await load_bundle(f"file://{args.foundation}")
        b.load_agent_metadata()
        return b.to_mount_plan()

    foundation_plan = asyncio.run(plan())
    root_id = str(uuid.uuid4())
    child_id = f"{'0' * 16}-{uuid.uuid4().hex[:16]}_explorer"
    now = datetime.now(UTC).isoformat()
    # main.py's root save: no config, no depth, no parent.
    store.save(root_id, [{"role": "user", "content": "Map the crate"},
                         {"role": "assistant", "content": "Delegated."}],
               {"session_id": root_id, "created": now, "bundle": "bundle:foundation",
                "model": "stub-model", "turn_count": 1, "working_dir": str(arbor.project)})
    explorer = foundation_plan["agents"]["foundation:explorer"]
    child_config = {**foundation_plan,
                    "providers": [{"module": "provider-openai", "config": {"api_key": "[REDACTED]",
                                                                          "default_model": "stub-model"}}],
                    "instruction": explorer.get("instruction", "")}
    # session_spawner.py's child save.
    store.save(child_id, [{"role": "user", "content": "Map the crate"},
                          {"role": "assistant", "content": "src/ holds lib.rs."}],
               {"session_id": child_id, "parent_id": root_id, "trace_id": root_id,
                "agent_name": "foundation:explorer", "child_span": child_id[17:33], "created": now,
                "config": child_config, "agent_overlay": explorer, "turn_count": 1,
                "bundle_context": {"module_paths": {}, "mention_mappings": {}},
                "self_delegation_depth": 0, "working_dir": str(arbor.project)})

    out = arbor.run("session", "list", "--json")
    if check("arbor lists the Amplifier tree", out.returncode == 0, out.stderr[-400:]):
        listed = {s["session_id"]: s for s in json.loads(out.stdout)}
        check("... root at depth 0, child at depth 1",
              listed.get(root_id, {}).get("depth") == 0 and listed.get(child_id, {}).get("depth") == 1,
              json.dumps({k: v.get("depth") for k, v in listed.items()}))
    out = arbor.run("session", "show", root_id)
    check("arbor shows the root with its rebuild note",
          out.returncode == 0 and "note      " in out.stdout and "Corrupted" not in out.stdout, out.stdout + out.stderr)
    out = arbor.run("session", "resume", root_id, "Again", "--output-format", "json")
    check("arbor resumes the Amplifier root",
          out.returncode == 0 and json.loads(out.stdout or "{}").get("response") == "Root again.", out.stdout + out.stderr[-400:])
    out = arbor.run("session", "resume", child_id, "More", "--output-format", "json")
    check("arbor resumes the Amplifier child",
          out.returncode == 0 and json.loads(out.stdout or "{}").get("response") == "Child again.", out.stdout + out.stderr[-400:])
    _, meta = store.load(root_id)
    check("Amplifier's SessionStore still loads the root arbor resumed", meta.get("session_id") == root_id)


# ---- a fork arbor made, opened by Amplifier ------------------------------------------


def arbor_fork(args, work: Path):
    from amplifier_app_cli.session_store import SessionStore
    from amplifier_foundation.session.fork import fork_session, get_session_lineage
    from amplifier_foundation.session.messages import slice_to_turn

    stub = Stub()
    stub.replies = [sse_tool_call("call_1", "read_file", {"file_path": "nothing.txt"}),
                    sse_text("One."), sse_text("Two.")]
    arbor = Arbor(args.arbor, work / "fork", stub)
    out = arbor.run("run", "--output-format", "json", "first")
    if not check("arbor runs a session to fork", out.returncode == 0, out.stderr[-400:]):
        return
    root_id = json.loads(out.stdout)["session_id"]
    out = arbor.run("session", "resume", root_id, "second")
    check("arbor resumes it for a second turn", out.returncode == 0, out.stderr[-400:])
    out = arbor.run("session", "fork", root_id, "--at-turn", "1", "--json")
    if not check("arbor session fork --json", out.returncode == 0, out.stderr[-400:]):
        return
    forked = json.loads(out.stdout)
    check("--json prints {session_id, parent_id, forked_from_turn}",
          set(forked) == {"session_id", "parent_id", "forked_from_turn"}
          and forked["parent_id"] == root_id and forked["forked_from_turn"] == 1, str(forked))
    fork_id = forked["session_id"]
    store = SessionStore(base_dir=arbor.sessions())
    try:
        transcript, meta = store.load(fork_id)
        check("Amplifier's SessionStore opens the fork", meta.get("session_id") == fork_id)
    except Exception as e:  # noqa: BLE001
        check("Amplifier's SessionStore opens the fork", False, repr(e))
        return
    check("... with foundation's lineage keys",
          meta.get("parent_id") == root_id and meta.get("forked_from_turn") == 1
          and meta.get("forked_at") and meta.get("turn_count") == 1, json.dumps(meta)[:400])
    original, _ = store.load(root_id)
    want = slice_to_turn(original, 1)
    strip = lambda ms: [{k: v for k, v in m.items() if k not in ("timestamp", "metadata")} for m in ms]
    check("the transcript equals foundation's slice_to_turn(original, 1)",
          strip(transcript) == strip(want), f"{len(transcript)} vs {len(want)} messages")
    lineage = get_session_lineage(arbor.sessions() / fork_id, arbor.sessions())
    check("foundation's get_session_lineage traces the fork to its parent",
          lineage.get("ancestors") == [root_id] and lineage.get("forked_from_turn") == 1, str(lineage))
    # And the other way: a fork foundation's fork_session wrote is resumed by arbor.
    result = fork_session(arbor.sessions() / root_id, turn=1)
    stub.replies = [sse_text("From Amplifier's fork.")]
    out = arbor.run("session", "resume", result.session_id, "go on", "--output-format", "json")
    check("arbor resumes a fork foundation's fork_session wrote",
          out.returncode == 0 and json.loads(out.stdout or "{}").get("response") == "From Amplifier's fork.",
          out.stdout + out.stderr[-400:])
    out = arbor.run("session", "list", "--json")
    listed = {s["session_id"]: s for s in json.loads(out.stdout or "[]")}
    check("both forks list at depth 0 (a fork is a root)",
          listed.get(fork_id, {}).get("depth") == 0 and listed.get(result.session_id, {}).get("depth") == 0,
          json.dumps({k: v.get("depth") for k, v in listed.items()}))


# ---- foundation's bundle -----------------------------------------------------------


def foundation_bundle(args, work: Path):
    from amplifier_foundation import load_bundle
    from amplifier_module_tool_delegate import DelegateTool

    async def plan():
        b = await load_bundle(f"file://{args.foundation}")
        b.load_agent_metadata()
        return b.to_mount_plan()

    foundation_plan = asyncio.run(plan())
    expected = DelegateTool(Coord(foundation_plan), {}).description
    stub = Stub()
    stub.replies = [sse_tool_call("call_1", "delegate", {"agent": "foundation:explorer", "instruction": "Map it"}),
                    sse_text("Mapped."), sse_text("Hello.")]
    arbor = Arbor(args.arbor, work / "foundation", stub)
    out = arbor.run("--bundle", str(Path(args.foundation) / "bundle.md"), "run", "--output-format", "json", "Hi")
    if not check("arbor runs with foundation's bundle.md", out.returncode == 0, out.stderr[-400:]):
        return
    tools = {t["function"]["name"]: t["function"] for t in stub.requests[0].get("tools", [])}
    if not check("arbor mounts delegate from foundation's behaviors/agents", "delegate" in tools, str(sorted(tools))):
        return
    ours, theirs = agents_section(tools["delegate"]["description"]), agents_section(expected)
    at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    check("delegate's 'Available agents' equals foundation's DelegateTool's", ours == theirs,
          f"{len(ours)} vs {len(theirs)} chars; first difference at {at}: "
          f"arbor {ours[max(0, at - 60):at + 40]!r} / foundation {theirs[max(0, at - 60):at + 40]!r}")

    # explorer's system prompt: foundation's mention expansion of its instruction.
    from amplifier_foundation import load_bundle as _load
    from amplifier_foundation.mentions import BaseMentionResolver, expand_mentions_in_instruction

    async def expanded():
        bundle = await _load(f"file://{args.foundation}")
        instruction = foundation_plan["agents"]["foundation:explorer"]["instruction"]
        resolver = BaseMentionResolver(bundles={"foundation": bundle}, base_path=arbor.project)
        return await expand_mentions_in_instruction(instruction, resolver=resolver, relative_to=arbor.project)

    want = asyncio.run(expanded())
    child = next((r for r in stub.requests[1:]
                  if any("# Explorer" in str(m.get("content")) for m in r.get("messages", [])
                         if m.get("role") == "system")), {})
    system = next((m.get("content") for m in child.get("messages", []) if m.get("role") == "system"), "")
    at = next((i for i, (a, b) in enumerate(zip(system, want)) if a != b), min(len(system), len(want)))
    check("explorer's system prompt equals foundation's mention expansion", system == want,
          f"{len(system)} vs {len(want)} chars; first difference at {at}: "
          f"arbor {system[max(0, at - 60):at + 40]!r} / foundation {want[max(0, at - 60):at + 40]!r}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arbor", required=True)
    parser.add_argument("--foundation", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    work = Path(args.work)
    for step in (arbor_to_amplifier, amplifier_to_arbor, arbor_fork, foundation_bundle):
        try:
            step(args, work)
        except Exception as e:  # noqa: BLE001
            check(step.__name__, False, repr(e))
    failed = sum(1 for _, ok, _ in RESULTS if not ok)
    print(f"{len(RESULTS) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
