// node-runner.mjs — run a benchmark module in node's WebAssembly engine (V8).
//
//   node bench/node-runner.mjs X.wasm [CALLS]
//
// Compiles and instantiates X.wasm with no imports, calls run() CALLS times
// (default 3) in the same instance and prints the checksum on the first line
// of stdout (like `airlock run X.wasm --invoke run`), then one line of
// timings measured inside node with performance.now():
//
//   node_ms compile=C first=F best=B
//
// compile covers WebAssembly.Module + Instance, first is the first call of
// run() (which includes V8's tier-up from Liftoff to TurboFan), best is the
// fastest of the CALLS calls. Every call must return the same checksum.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const [file, callsArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node node-runner.mjs X.wasm [CALLS]');
  process.exit(2);
}
const calls = Math.max(1, parseInt(callsArg ?? '3', 10) || 1);
const bytes = readFileSync(file);

const t0 = performance.now();
const module = new WebAssembly.Module(bytes);
const instance = new WebAssembly.Instance(module, {});
const compileMs = performance.now() - t0;

const run = instance.exports.run;
if (typeof run !== 'function') {
  console.error(`${file}: no exported function "run"`);
  process.exit(2);
}

let checksum;
let first = 0;
let best = Infinity;
for (let i = 0; i < calls; i++) {
  const t = performance.now();
  const r = run();
  const ms = performance.now() - t;
  if (i === 0) {
    first = ms;
    checksum = r;
  } else if (r !== checksum) {
    console.error(`checksum changed between calls: ${checksum} then ${r}`);
    process.exit(1);
  }
  best = Math.min(best, ms);
}
console.log(String(checksum));
console.log(`node_ms compile=${compileMs.toFixed(3)} first=${first.toFixed(3)} best=${best.toFixed(3)}`);
