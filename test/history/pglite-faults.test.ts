import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { openStore } from '../../src/store/engine';
import { cascadeDelay, drill, MINUTES, newTotals, report, Server, TREE, type Fault, type Target } from './drill';

/**
 * The history drills (test/history/drill.ts) on the embedded engine: the built server on a PGlite data directory
 * of this run's own, killed -9 mid-cascade and started again on the same directory. That is the only fault the
 * engine has (PGlite runs inside the server's process: there is no database process or node to lose apart from
 * it). PGlite lets one process at a time open a directory, so the drill's seeding and its reading of what the
 * database holds after recovery happen while the server is stopped (Target.offline).
 */
describe('histories under faults, on PGlite', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hist-pglite-'));
  const totals = newTotals();
  const server = new Server(() => ({ RETRACT_ENGINE: 'pglite', RETRACT_DATA_DIR: dir }));
  const target: Target = {
    engine: 'pglite',
    server,
    tree: TREE,
    async offline(fn) {
      // Stopped the way an operator stops it (SIGTERM), so that what is read here is what it committed.
      await server.kill('SIGTERM');
      const store = await openStore({ dataDir: dir, migrate: false });
      try {
        return await fn(store.pglite!, store);
      } finally {
        await store.close();
        await server.start();
      }
    },
  };

  beforeAll(async () => {
    const store = await openStore({ dataDir: dir });
    await store.close();
  }, 300_000);
  afterAll(async () => {
    await server.kill().catch(() => {});
    fs.rmSync(dir, { recursive: true, force: true });
    report('pglite', totals, { tree: TREE });
  });

  const faults: Record<string, Fault | null> = {
    none: null,
    'server-kill': {
      inject: async (run) => {
        await cascadeDelay(run);
        await server.kill();
        await server.start();
        return 1;
      },
    },
  };
  const names = Object.keys(faults);
  it.each(names)(
    "%s: the clients' history shows no anomaly and nothing lost",
    async (fault) => {
      await drill(target, fault, names.indexOf(fault), faults[fault]!, totals);
    },
    600_000,
  );

  it.runIf(MINUTES > 0)(
    `soak: the server killed -9 in turn with the fault-free run for ${MINUTES} minutes`,
    async () => {
      const until = Date.now() + MINUTES * 60_000;
      for (let run = names.length; Date.now() < until; run++) {
        const fault = names[run % names.length]!;
        await drill(target, fault, run, faults[fault]!, totals);
      }
    },
    MINUTES * 60_000 + 600_000,
  );
});
