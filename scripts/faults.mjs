// `npm run test:faults -- --minutes N`: the history drills (every fault in turn, each judged by the history
// checker) on each engine, repeated for N minutes after the one round `npm run test:history` runs: PostgreSQL
// (test/history/faults.test.ts), Citus (citus-faults.test.ts) and PGlite (pglite-faults.test.ts), one engine after
// the other so that each has the machine's cores to itself. The server engines' drills make throwaway clusters of
// their own; RETRACT_TEST_DATABASE_URL and RETRACT_TEST_CITUS_URL only say the engines are there.
import { spawnSync } from 'node:child_process';

const i = process.argv.indexOf('--minutes');
const minutes = i >= 0 ? Number(process.argv[i + 1]) : 5;
if (!Number.isFinite(minutes) || minutes <= 0) {
  console.error('usage: npm run test:faults -- --minutes N (N > 0)');
  process.exit(2);
}
const env = {
  ...process.env,
  RETRACT_TEST_DATABASE_URL: process.env.RETRACT_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  RETRACT_TEST_CITUS_URL: process.env.RETRACT_TEST_CITUS_URL ?? 'postgres://postgres@127.0.0.1:9700/postgres',
  RETRACT_FAULTS_MINUTES: String(minutes),
  RETRACT_HISTORY_CLIENTS: process.env.RETRACT_HISTORY_CLIENTS ?? '8',
  RETRACT_HISTORY_OPS: process.env.RETRACT_HISTORY_OPS ?? '40',
  RETRACT_HISTORY_TREE: process.env.RETRACT_HISTORY_TREE ?? '10000',
};
let status = 0;
for (const file of ['faults', 'citus-faults', 'pglite-faults']) {
  const r = spawnSync('npx', ['vitest', 'run', '--config', 'vitest.slow.config.ts', `test/history/${file}.test.ts`], {
    env,
    stdio: 'inherit',
  });
  status ||= r.status ?? 1;
}
// Each engine's totals are in results/history-<engine>.json.
process.exit(status);
