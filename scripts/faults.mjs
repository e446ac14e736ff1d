// `npm run test:faults -- --minutes N`: the history drills of test/history/faults.test.ts (every fault in turn,
// each judged by the history checker) repeated for N minutes after the one round `npm run test:history` runs.
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
  RETRACT_FAULTS_MINUTES: String(minutes),
  RETRACT_HISTORY_CLIENTS: process.env.RETRACT_HISTORY_CLIENTS ?? '8',
  RETRACT_HISTORY_OPS: process.env.RETRACT_HISTORY_OPS ?? '40',
  RETRACT_HISTORY_TREE: process.env.RETRACT_HISTORY_TREE ?? '10000',
};
const r = spawnSync('npx', ['vitest', 'run', '--config', 'vitest.slow.config.ts', 'test/history/faults.test.ts'], {
  env,
  stdio: 'inherit',
});
process.exit(r.status ?? 1);
