#!/usr/bin/env node
// tools/python-wasi/run-node.mjs — run python.wasm (from tools/build-python.sh)
// under node's WASI preview1, the reference host until airlock's own is ready.
//
//   node tools/python-wasi/run-node.mjs [options] PYTHON_WASM [python args...]
//
//   --map GUEST=HOST   preopen host dir HOST at guest path GUEST (repeatable);
//                      default when no --map is given: the current directory
//                      at guest "/" (the guest's cwd), so relative script paths work
//   --no-map           preopen nothing but the stdlib
//   --env K=V          add a guest environment variable (repeatable)
//   --stdlib DIR       host stdlib dir (default: <dir of PYTHON_WASM>/lib/python3.11)
//   --time             print compile and run wall times to stderr
//   --trace            count the WASI calls python.wasm makes; summary to stderr
//
// Guest layout (matches <output>/README and <output>/env):
//   preopen HOST stdlib at /usr/local/lib/python3.11, env PYTHONHOME=/usr/local,
//   argv[0] /usr/local/bin/python3.11. No host environment is passed through.
// Exit code: python's.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';

// Keep stderr python's: drop node's one-off "WASI is an experimental feature" warning.
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  if (String(warning?.message ?? warning).includes('WASI is an experimental feature')) return;
  return emitWarning.call(process, warning, ...rest);
};
const { WASI } = await import('node:wasi');

const GUEST_STDLIB = '/usr/local/lib/python3.11';
const GUEST_HOME = '/usr/local';
const ARGV0 = '/usr/local/bin/python3.11';

function usage(code) {
  const text = readFileSync(new URL(import.meta.url), 'utf8')
    .split('\n').slice(1, 20).map((l) => l.replace(/^\/\/ ?/, '')).join('\n');
  (code ? process.stderr : process.stdout).write(text + '\n');
  process.exit(code);
}

const argv = process.argv.slice(2);
const maps = [];
const extraEnv = {};
let noMap = false;
let stdlib = null;
let timing = false;
let trace = false;
while (argv.length && argv[0].startsWith('--')) {
  const opt = argv.shift();
  const val = () => {
    if (!argv.length) { console.error(`run-node: ${opt} needs a value`); process.exit(2); }
    return argv.shift();
  };
  if (opt === '--map') {
    const v = val(); const i = v.indexOf('=');
    if (i <= 0) { console.error(`run-node: --map wants GUEST=HOST, got '${v}'`); process.exit(2); }
    maps.push([v.slice(0, i), path.resolve(v.slice(i + 1))]);
  } else if (opt === '--no-map') noMap = true;
  else if (opt === '--env') {
    const v = val(); const i = v.indexOf('=');
    if (i <= 0) { console.error(`run-node: --env wants K=V, got '${v}'`); process.exit(2); }
    extraEnv[v.slice(0, i)] = v.slice(i + 1);
  } else if (opt === '--stdlib') stdlib = path.resolve(val());
  else if (opt === '--time') timing = true;
  else if (opt === '--trace') trace = true;
  else if (opt === '--help') usage(0);
  else if (opt === '--') break;
  else { console.error(`run-node: unknown option ${opt}`); usage(2); }
}
if (!argv.length) usage(2);
const wasmPath = path.resolve(argv.shift());
stdlib ??= path.join(path.dirname(wasmPath), 'lib', 'python3.11');
try {
  statSync(path.join(stdlib, 'os.py'));
} catch {
  console.error(`run-node: no stdlib at ${stdlib} (expected os.py there); run tools/build-python.sh`);
  process.exit(2);
}

const preopens = {};
if (!noMap && maps.length === 0) preopens['/'] = process.cwd();
for (const [g, h] of maps) preopens[g] = h;
preopens[GUEST_STDLIB] = stdlib;

const t0 = performance.now();
const wasi = new WASI({
  version: 'preview1',
  args: [ARGV0, ...argv],
  env: { PYTHONHOME: GUEST_HOME, ...extraEnv },
  preopens,
  returnOnExit: true,
});
const module = await WebAssembly.compile(readFileSync(wasmPath));
const t1 = performance.now();
const imports = wasi.getImportObject();
const counts = new Map();
if (trace) {
  const ns = imports.wasi_snapshot_preview1;
  for (const [name, fn] of Object.entries(ns)) {
    ns[name] = (...a) => { counts.set(name, (counts.get(name) ?? 0) + 1); return fn(...a); };
  }
}
const instance = await WebAssembly.instantiate(module, imports);
const code = wasi.start(instance);
const t2 = performance.now();
if (timing) {
  process.stderr.write(`run-node: compile ${(t1 - t0).toFixed(0)} ms, instantiate+run ${(t2 - t1).toFixed(0)} ms\n`);
}
if (trace) {
  const rows = [...counts].sort((a, b) => b[1] - a[1]).map(([n, c]) => `${n} ${c}`);
  process.stderr.write(`run-node: WASI calls: ${rows.join(', ')}\n`);
}
process.exitCode = code;
