import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { onPath } from '../support/metrics';

const run = promisify(execFile);

const HAVE = onPath('promtool');
const WHY = HAVE
  ? ''
  : " (skipped: promtool is not on PATH; `bash scripts/ensure-prometheus.sh` installs Debian's prometheus, which has it)";
if (!HAVE) console.warn(`test/docs/alerts.test.ts:${WHY}`);

describe.skipIf(!HAVE)(`the example alert rules in docs/prometheus${WHY}`, () => {
  it('pass `promtool check rules`', async () => {
    const { stdout } = await run('promtool', ['check', 'rules', 'docs/prometheus/alerts.yml']);
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('pass their unit tests, `promtool test rules docs/prometheus/alerts.test.yml`', async () => {
    const r = await run('promtool', ['test', 'rules', 'alerts.test.yml'], { cwd: 'docs/prometheus' }).catch(
      (e: { stdout: string; stderr: string }) => {
        throw new Error(`promtool test rules failed:\n${e.stdout}\n${e.stderr}`);
      },
    );
    expect(r.stdout).toMatch(/SUCCESS/);
  });
});
