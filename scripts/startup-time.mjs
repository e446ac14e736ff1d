// `npm run startup-time`: how long `npm start`'s compiled server takes to answer /health on the
// embedded engine, on a fresh data directory and on an existing one (the median of --runs starts
// each), beside the targets: ≤ 4 s fresh, ≤ 2 s existing. Exits 1 when a target is missed.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const runs = Number(process.argv[process.argv.indexOf('--runs') + 1]) || 3;
const TARGETS = { fresh: 4000, existing: 2000 };
const MAIN = 'build/src/server/main.js';
if (!fs.existsSync(MAIN)) {
  console.error(`startup-time: ${MAIN} is missing; run npm run build`);
  process.exit(2);
}

const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** Starts the server on dataDir, returns ms until /health answers 200, then stops it. */
async function timeToHealth(dataDir) {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, PORT: String(port), RETRACT_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`);
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return performance.now() - started;
      if (performance.now() - started > 120_000) throw new Error('no /health answer within 120 s');
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-startup-'));
const times = { fresh: [], existing: [] };
try {
  for (let i = 0; i < runs; i++) {
    const dir = path.join(root, `run-${i}`);
    times.fresh.push(await timeToHealth(dir));
    times.existing.push(await timeToHealth(dir));
  }
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}

let missed = false;
console.log(
  `startup time to /health, node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${runs} runs each`,
);
for (const kind of ['fresh', 'existing']) {
  const m = median(times[kind]);
  const met = m <= TARGETS[kind];
  missed ||= !met;
  const all = times[kind].map((t) => t.toFixed(0)).join(', ');
  console.log(
    `startup ${kind}: ${m.toFixed(0)} ms median (runs: ${all}) vs target ${TARGETS[kind]} ms ${met ? 'MET' : 'MISSED'}`,
  );
}
process.exit(missed ? 1 : 0);
