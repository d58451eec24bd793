// client.mjs — airlock's MCP server checked with the official TypeScript SDK
// (@modelcontextprotocol/sdk), over one transport per run:
//
//   node client.mjs stdio AIRLOCK CONFIG     spawns `AIRLOCK mcp --config CONFIG`
//   node client.mjs http URL TOKEN           Streamable HTTP to URL (airlockd's /mcp)
//
// Prints one line per check: "PASS name", "FAIL name: why" or
// "SKIP name: why"; run.sh counts them. The SDK itself is part of the check:
// it negotiates the protocol revision, validates every result against the
// schemas the server declares (structuredContent against outputSchema), and
// rejects malformed responses. Environment: AIRLOCK_MCP_PYTHON=0 skips the
// Python checks (no python.wasm here).
import { spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

const [mode, target, extra] = process.argv.slice(2);
const havePython = process.env.AIRLOCK_MCP_PYTHON !== "0";
const haveServlet = process.env.AIRLOCK_MCP_SERVLET === "1"; // capability "textkit" installed
const CALL_TIMEOUT_MS = 120000; // ASan builds and gVisor are slow; the server bounds runs itself

function pass(name) {
  console.log(`PASS ${mode}: ${name}`);
}
function fail(name, why) {
  console.log(`FAIL ${mode}: ${name}: ${why}`);
}
function skip(name, why) {
  console.log(`SKIP ${mode}: ${name}: ${why}`);
}

// Run one check; an exception is a failure with its message.
async function check(name, fn) {
  try {
    const outcome = await fn();
    if (outcome && outcome.skip) skip(name, outcome.skip);
    else pass(name);
  } catch (e) {
    fail(name, (e && e.message ? e.message : String(e)).split("\n")[0]);
  }
}

function expect(cond, why) {
  if (!cond) throw new Error(why);
}

function text(result) {
  return (result.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

function makeTransport() {
  if (mode === "stdio") {
    return new StdioClientTransport({
      command: target,
      args: ["mcp", "--config", extra],
      env: { ...process.env },
      stderr: "inherit",
    });
  }
  if (mode === "http") {
    return new StreamableHTTPClientTransport(new URL(target), {
      requestInit: { headers: { Authorization: `Bearer ${extra}` } },
    });
  }
  throw new Error(`usage: node client.mjs stdio AIRLOCK CONFIG | http URL TOKEN`);
}

async function sdkChecks() {
  const client = new Client({ name: "airlock-tests", version: "1.0.0" });
  const transport = makeTransport();
  let connected = false;
  await check("initialize", async () => {
    await client.connect(transport);
    connected = true;
    const info = client.getServerVersion();
    expect(info && info.name === "airlock", `serverInfo.name is ${info && info.name}`);
    const caps = client.getServerCapabilities();
    expect(caps && caps.tools, "no tools capability");
    expect(client.getInstructions(), "no instructions");
  });
  if (!connected) return;
  if (mode === "http") {
    await check("session id and negotiated revision", async () => {
      expect(transport.sessionId, "no Mcp-Session-Id from the server");
      expect(
        transport.protocolVersion === LATEST_PROTOCOL_VERSION,
        `negotiated ${transport.protocolVersion}, expected ${LATEST_PROTOCOL_VERSION}`,
      );
    });
  }

  await check("ping", async () => {
    await client.ping();
  });

  await check("tools/list: three tools with input and output schemas", async () => {
    const { tools: all } = await client.listTools();
    const tools = all.filter((t) => t.name.startsWith("run_"));
    const names = tools.map((t) => t.name).sort().join(",");
    expect(names === "run_command,run_python,run_wasm", `tools: ${names}`);
    for (const t of tools) {
      expect(t.inputSchema && t.inputSchema.type === "object", `${t.name}: inputSchema`);
      expect(t.outputSchema && t.outputSchema.type === "object", `${t.name}: outputSchema`);
      expect(t.outputSchema.properties.status, `${t.name}: outputSchema has no status`);
    }
    const py = tools.find((t) => t.name === "run_python");
    expect(JSON.stringify(py.inputSchema.required) === '["code"]', "run_python requires code");
  });

  // callTool validates structuredContent against the tool's outputSchema.
  await check("tools/call run_python print", async () => {
    if (!havePython) return { skip: "python.wasm not built" };
    const r = await client.callTool(
      { name: "run_python", arguments: { code: "print(6 * 7)" } },
      undefined,
      { timeout: CALL_TIMEOUT_MS },
    );
    expect(!r.isError, `isError set: ${text(r)}`);
    expect(r.structuredContent.status === "ok", `status ${r.structuredContent.status}`);
    expect(r.structuredContent.stdout === "42\n", `stdout ${JSON.stringify(r.structuredContent.stdout)}`);
    expect(text(r).includes("42"), "text content lacks the output");
  });

  await check("tools/call run_python failure sets isError", async () => {
    if (!havePython) return { skip: "python.wasm not built" };
    const r = await client.callTool(
      { name: "run_python", arguments: { code: "raise SystemExit(3)", timeout_ms: 60000 } },
      undefined,
      { timeout: CALL_TIMEOUT_MS },
    );
    expect(r.isError === true, "isError not set");
    expect(r.structuredContent.status === "exit", `status ${r.structuredContent.status}`);
    expect(r.structuredContent.exit_code === 3, `exit_code ${r.structuredContent.exit_code}`);
  });

  await check("tools/call run_command echo", async () => {
    const r = await client.callTool(
      { name: "run_command", arguments: { argv: ["echo", "hello", "mcp"] } },
      undefined,
      { timeout: CALL_TIMEOUT_MS },
    );
    const sc = r.structuredContent;
    if (sc && sc.status === "unsupported") return { skip: `native backend unavailable: ${sc.error}` };
    expect(!r.isError, `isError set: ${text(r)}`);
    expect(sc.stdout === "hello mcp\n", `stdout ${JSON.stringify(sc.stdout)}`);
  });

  await check("tools/call run_wasm with a bad module is an execution error", async () => {
    const r = await client.callTool(
      { name: "run_wasm", arguments: { module_base64: Buffer.from("not wasm").toString("base64") } },
      undefined,
      { timeout: CALL_TIMEOUT_MS },
    );
    expect(r.isError === true, "isError not set");
    expect(r.structuredContent.status === "invalid_module", `status ${r.structuredContent.status}`);
  });

  await check("invalid arguments: an isError result naming the argument", async () => {
    const r = await client.callTool({ name: "run_python", arguments: { code: 42 } });
    expect(r.isError === true, "isError not set");
    expect(/\bcode\b/.test(text(r)), `message does not name code: ${text(r)}`);
  });

  await check("unknown tool: JSON-RPC error -32602", async () => {
    try {
      await client.callTool({ name: "no_such_tool", arguments: {} });
    } catch (e) {
      expect(e.code === -32602, `code ${e.code}`);
      return;
    }
    throw new Error("no error");
  });

  // MCP servlets (issue 7): a capability exporting describe + call
  await check("tools/list: an installed servlet's tools", async () => {
    if (!haveServlet) return { skip: "example plugins not built" };
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).filter((n) => n.startsWith("textkit_")).sort().join(",");
    expect(names === "textkit_count_vowels,textkit_reverse", `servlet tools: ${names}`);
    const t = tools.find((x) => x.name === "textkit_count_vowels");
    expect(t.inputSchema && t.inputSchema.type === "object", "inputSchema");
    expect(t.description, "description");
  });

  await check("tools/call of a servlet tool: content from the plugin", async () => {
    if (!haveServlet) return { skip: "example plugins not built" };
    const r = await client.callTool(
      { name: "textkit_count_vowels", arguments: { text: "sandboxed plugins" } },
      undefined,
      { timeout: CALL_TIMEOUT_MS },
    );
    expect(!r.isError, `isError set: ${text(r)}`);
    expect(/\b5\b/.test(text(r)), `text: ${text(r)}`);
  });

  await check("tools/call of a servlet tool with bad arguments: isError from the plugin", async () => {
    if (!haveServlet) return { skip: "example plugins not built" };
    const r = await client.callTool({ name: "textkit_reverse", arguments: { text: 42 } });
    expect(r.isError === true, `isError not set: ${text(r)}`);
  });

  await check("close", async () => {
    await client.close();
  });
}

// The stdio transport at the byte level: what the SDK never sends.
function rawExchange(lines) {
  return new Promise((resolve, reject) => {
    const child = spawn(target, ["mcp", "--config", extra], { stdio: ["pipe", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("error", reject);
    child.on("close", (code) => {
      try {
        resolve({ code, messages: out.split("\n").filter((l) => l).map((l) => JSON.parse(l)) });
      } catch (e) {
        reject(new Error(`stdout is not one JSON message per line: ${e.message}`));
      }
    });
    child.stdin.end(lines.join("\n") + "\n");
  });
}

async function rawChecks() {
  const init = (v, id) =>
    JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "initialize",
      params: { protocolVersion: v, capabilities: {}, clientInfo: { name: "raw", version: "0" } },
    });
  await check("raw: revisions 2025-06-18, 2025-03-26 accepted, others get ours", async () => {
    for (const [asked, answer] of [
      ["2025-06-18", "2025-06-18"],
      ["2025-03-26", "2025-03-26"],
      ["2024-11-05", "2025-11-25"],
    ]) {
      const { messages } = await rawExchange([init(asked, 1)]);
      const got = messages[0] && messages[0].result && messages[0].result.protocolVersion;
      expect(got === answer, `asked ${asked}, got ${got}`);
    }
  });
  await check("raw: parse error, batch, before-initialize, notification", async () => {
    const { code, messages } = await rawExchange([
      "{not json",
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      JSON.stringify([{ jsonrpc: "2.0", id: 2, method: "ping" }]),
      init("2025-11-25", "i"),
      JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
      JSON.stringify({ jsonrpc: "2.0", id: 3, method: "resources/list" }),
      JSON.stringify({ jsonrpc: "2.0", id: 4, method: "ping" }),
    ]);
    expect(code === 0, `exit status ${code}`);
    const codes = messages.map((m) => (m.error ? m.error.code : "ok"));
    const want = [-32700, -32600, -32600, "ok", -32601, "ok"];
    expect(JSON.stringify(codes) === JSON.stringify(want), `answers ${JSON.stringify(codes)}`);
    expect(messages[3].id === "i" && messages[5].id === 4, "ids not echoed");
  });
}

// Streamable HTTP at the request level: what the SDK never sends.
async function rawHttpChecks() {
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
  });
  const post = (headers) =>
    fetch(target, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...headers },
      body,
    });
  await check("raw: no token is refused", async () => {
    const r = await post({});
    expect(r.status === 401, `status ${r.status}`);
  });
  await check("raw: a foreign Origin is refused (DNS rebinding)", async () => {
    const r = await post({ Authorization: `Bearer ${extra}`, Origin: "http://evil.example" });
    expect(r.status === 403, `status ${r.status}`);
  });
  await check("raw: an unknown Mcp-Session-Id is 404", async () => {
    const r = await fetch(target, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        Authorization: `Bearer ${extra}`,
        "Mcp-Session-Id": "0123456789abcdef0123456789abcdef",
        "MCP-Protocol-Version": "2025-11-25",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }),
    });
    expect(r.status === 404, `status ${r.status}`);
  });
}

await sdkChecks();
if (mode === "stdio") await rawChecks();
if (mode === "http") await rawHttpChecks();
