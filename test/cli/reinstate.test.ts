import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retractBelief } from '../../src/retraction/retraction.service';
import { actorIn } from '../support/engines';
import { passportStory } from '../support/story';
import { type ApiServer, agentWith, startApiServer } from '../support/api-server';
import { ROOT, TSX_CLI, childEnv } from '../mcp/support';

/** `retract reinstate` against a real server, as a child process: what a user sees (exit status, stdout, stderr). */
function run(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [TSX_CLI, 'src/cli/main.ts', ...args], {
      cwd: ROOT,
      env: childEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('retract reinstate', { timeout: 240_000 }, () => {
  let s: ApiServer;
  beforeAll(async () => {
    s = await startApiServer('pglite');
  });
  afterAll(async () => s?.close());

  it('prints the passport reinstatement: $1,240.00 and $89.00 voided, $0 re-execution owed; again, the same receipt; without a token, exit 2', async () => {
    const actor = await actorIn(s.db.store, 'acme');
    const st = await passportStory(s.core, actor);
    const { retractionId } = await retractBelief(s.core, actor, { beliefId: st.passport.id, reason: 'forged' });
    const agent = await agentWith(s.db.store, 'acme', ['beliefs:retract', 'receipts:read'], 'cli');
    const env = { RETRACT_TOKEN: agent.token, RETRACT_URL: s.http };
    const first = await run(['reinstate', retractionId, '--reason', 'genuine after all'], env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    // Counts in the right number: "1 effect", "0 contradictions" (it printed "1 effects restorable").
    expect(first.stdout).toMatch(/REINSTATED: 4 beliefs reinstated, 0 contradictions raised, 1 effect restorable\n/);
    expect(first.stdout).toMatch(/VOIDED\s+was OWED\s+\$1,240\.00/);
    expect(first.stdout).toMatch(/VOIDED\s+was UNREACHABLE\s+\$89\.00/);
    expect(first.stdout).toMatch(/voided \$1,329\.00 \/ in flight \$0\.00 \/ re-execution owed \$0\.00/);
    const again = await run(['reinstate', retractionId, '--reason', 'again'], env);
    expect(again.stdout).toBe(first.stdout);
    const missing = await run(['reinstate', retractionId, '--reason', 'x'], { RETRACT_URL: s.http });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^retract: RETRACT_TOKEN/);
    const unknown = await run(['reinstate', '999999', '--reason', 'x'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toMatch(/^retract: NOT_FOUND: /);
  });
});
