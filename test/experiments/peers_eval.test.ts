/**
 * `npm run eval:peers` as CI runs it: a child process, its exit code, and the figures of its JSON report. Every
 * cell comes from the run, so the peers' rows are asserted too: they are what the FINDINGS table says.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

it(
  'eval:peers: RETRACT takes down what was derived and cancels what was pending, names the money; the peers keep all of it',
  { timeout: 240_000 },
  async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-peers-'));
    const out = path.join(dir, 'peers.json');
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, NODE_NO_WARNINGS: '1' };
      for (const k of ['DATABASE_URL', 'PEERS_MEM0_DIR']) delete env[k];
      const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          path.join(root, 'node_modules/.bin/tsx'),
          [path.join(root, 'experiments/peers_eval.ts'), '--out', out],
          { cwd: root, env, timeout: 220_000 },
          (err, stdout, stderr) =>
            resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
        );
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/derived still believed/);
      const doc = JSON.parse(fs.readFileSync(out, 'utf8')) as {
        rows: Array<Record<string, unknown>>;
        misses: string[];
        mem0: string | null;
      };
      const cells = (peer: string) => {
        const row = doc.rows.find((x) => String(x.peer).startsWith(peer))!;
        return [
          row.derivedBelieved,
          row.pendingLive,
          row.owedNamedMinor,
          row.unreachableNamedMinor,
          row.unrelatedLost,
          row.forgeryCalls,
        ];
      };
      expect(cells('(a)')).toEqual([3, 1, 0, 0, 0, 1]);
      expect(cells('(b)')).toEqual([3, 1, 0, 0, 0, 1]);
      expect(cells('(c)')).toEqual([0, 0, 124_000, 8_900, 0, 1]);
      expect(cells('(d)')).toEqual([0, 0, 124_000, 8_900, 0, 1]);
      expect(doc.misses).toEqual([]);
      expect(doc.mem0).toMatch(/^not installed here/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
);
