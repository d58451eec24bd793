// ref-node.mjs — a stand-in for `airlock run` built on node:wasi, to check
// the security battery itself: that its guests compile, run, pass their
// sanity checks and DO report LEAK lines against a runtime that is not a
// sandbox (node's WASI documentation says as much). Not part of the product.
//
//   AIRLOCK="node tests/security/ref-node.mjs" tests/security/run.sh 'read_passwd|traversal'
//
// Supports: run [--json] [--dir HOST[:GUEST][:ro|:rw]]... [--env K=V]...
// [--stdin FILE] MODULE.wasm [-- ARGS...]. --fuel, --timeout and --memory are
// accepted and ignored (node cannot enforce them), so those cases fail here.
import { WASI } from 'node:wasi';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const argv = process.argv.slice(2);
if (argv[0] !== 'run') {
    process.stderr.write('ref-node.mjs: only "run" is supported\n');
    process.exit(2);
}
let json = false, module = null, stdinFile = null;
const env = {}, preopens = {}, args = [];
for (let i = 1; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--json') json = true;
    else if (a === '--dir') {
        const parts = argv[++i].split(':');
        let mode = 'rw';
        if (parts.length > 1 && (parts.at(-1) === 'ro' || parts.at(-1) === 'rw')) mode = parts.pop();
        const host = parts[0], guest = parts[1] ?? parts[0];
        preopens[guest] = host; // node has no read-only preopens
    } else if (a === '--env') {
        const kv = argv[++i], eq = kv.indexOf('=');
        env[kv.slice(0, eq)] = kv.slice(eq + 1);
    } else if (a === '--stdin') stdinFile = argv[++i];
    else if (['--fuel', '--timeout', '--memory'].includes(a)) i++;
    else if (a === '--') { args.push(...argv.slice(i + 1)); break; }
    else if (!module) module = a;
    else { process.stderr.write(`ref-node.mjs: unexpected ${a}\n`); process.exit(2); }
}
const bytes = fs.readFileSync(module);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ref-node-'));
const outPath = path.join(tmp, 'out'), errPath = path.join(tmp, 'err');
const inFd = fs.openSync(stdinFile ?? '/dev/null', 'r');
const outFd = json ? fs.openSync(outPath, 'w') : 1;
const errFd = json ? fs.openSync(errPath, 'w') : 2;
const wasi = new WASI({
    version: 'preview1', args: [path.basename(module), ...args], env, preopens,
    returnOnExit: true, stdin: inFd, stdout: outFd, stderr: errFd,
});
const start = Date.now();
let status = 'ok', code = 0, trap = null, error = null;
try {
    const mod = await WebAssembly.compile(bytes);
    const inst = await WebAssembly.instantiate(mod, wasi.getImportObject());
    code = wasi.start(inst);
    if (code !== 0) status = 'exit';
} catch (e) {
    if (e instanceof WebAssembly.CompileError) { status = 'invalid_module'; code = 65; }
    else if (e instanceof WebAssembly.RuntimeError) { status = 'trap'; code = 70; trap = e.message; }
    else { status = 'error'; code = 1; }
    error = String(e.message ?? e);
}
const exitFor = { ok: 0, exit: code, trap: 70, invalid_module: 65, error: 1 };
if (json) {
    const cap = 1 << 20;
    const rd = (p) => { const b = fs.readFileSync(p); return [b.subarray(0, cap).toString('latin1'), b.length > cap]; };
    const [so, sot] = rd(outPath), [se, set] = rd(errPath);
    fs.rmSync(tmp, { recursive: true });
    process.stdout.write(JSON.stringify({
        status, exit_code: status === 'exit' || status === 'ok' ? code : 0, trap,
        fuel_used: 0, wall_ms: Date.now() - start, peak_memory_bytes: 0,
        stdout: so, stderr: se, stdout_truncated: sot, stderr_truncated: set, error,
    }) + '\n');
} else {
    fs.rmSync(tmp, { recursive: true });
    if (error) process.stderr.write(`ref-node.mjs: ${error}\n`);
}
process.exit(exitFor[status]);
