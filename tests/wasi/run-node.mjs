// run-node.mjs — the reference side of tests/wasi/compare-node.sh: runs a
// WASI preview1 command under node 20's node:wasi with the same grants that
// `airlock run` would be given, and with the same observable conventions, so
// that the two runs can be compared byte for byte.
//
//   node --no-warnings tests/wasi/run-node.mjs [--dir HOST:GUEST[:ro|:rw]]...
//        [--env K=V]... [--stdin FILE] MODULE.wasm [-- ARGS...]
//
// Conventions copied from `airlock run` (src/cli/run_wasi.c):
//   - argv[0] is the module's file name (basename), then ARGS;
//   - the environment is exactly the --env entries (the last KEY wins);
//   - stdin is FILE ("-": this process's own stdin, which is how
//     compare-node.sh hands the guest a pipe), or empty (/dev/null) without
//     --stdin;
//   - the guest's stdout and stderr are this process's fds 1 and 2;
//   - exit status: 0 when _start returns; a proc_exit code keeps its low
//     byte, and becomes 1 if that byte is 0 (a failing guest never looks like
//     a success); 70 for a trap (with "node: trap: MESSAGE" on stderr), 65
//     for a module that does not compile, 1 for any other failure.
// node has no read-only preopens: ":ro" is refused here (exit 2) rather than
// silently granting write access; compare-node.sh runs such programs under
// airlock only.
import { WASI } from 'node:wasi';
import fs from 'node:fs';
import path from 'node:path';

function usage(msg) {
    process.stderr.write(`run-node.mjs: ${msg}\n`);
    process.exit(2);
}

const argv = process.argv.slice(2);
const env = {}, preopens = {}, args = [];
let module = null, stdinFile = null;
for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--dir') {
        if (i + 1 >= argv.length) usage('--dir needs HOST:GUEST');
        const parts = argv[++i].split(':');
        if (parts.at(-1) === 'ro') usage('node has no read-only preopens');
        if (parts.at(-1) === 'rw') parts.pop();
        if (parts.length !== 2 || !parts[1].startsWith('/')) usage('--dir wants HOST:GUEST');
        preopens[parts[1]] = parts[0];
    } else if (a === '--env') {
        if (i + 1 >= argv.length) usage('--env needs K=V');
        const kv = argv[++i], eq = kv.indexOf('=');
        if (eq <= 0) usage(`--env ${kv}: no "="`);
        env[kv.slice(0, eq)] = kv.slice(eq + 1);
    } else if (a === '--stdin') {
        if (i + 1 >= argv.length) usage('--stdin needs FILE');
        stdinFile = argv[++i];
    } else if (a === '--') {
        args.push(...argv.slice(i + 1));
        break;
    } else if (!module && !a.startsWith('-')) {
        module = a;
    } else {
        usage(`unexpected argument ${a}`);
    }
}
if (!module) usage('no module');

const bytes = fs.readFileSync(module);
const stdin = stdinFile === '-' ? 0 : fs.openSync(stdinFile ?? '/dev/null', 'r');
const wasi = new WASI({
    version: 'preview1',
    args: [path.basename(module), ...args],
    env,
    preopens,
    returnOnExit: true,
    stdin,
    stdout: 1,
    stderr: 2,
});

let status;
try {
    const mod = await WebAssembly.compile(bytes);
    const inst = await WebAssembly.instantiate(mod, wasi.getImportObject());
    const code = wasi.start(inst) ?? 0;
    status = code === 0 ? 0 : (code & 0xff) || 1;
} catch (e) {
    if (e instanceof WebAssembly.CompileError) {
        process.stderr.write(`node: invalid module: ${e.message}\n`);
        status = 65;
    } else if (e instanceof WebAssembly.RuntimeError) {
        process.stderr.write(`node: trap: ${e.message}\n`);
        status = 70;
    } else {
        process.stderr.write(`node: error: ${e?.message ?? e}\n`);
        status = 1;
    }
}
process.exit(status);
