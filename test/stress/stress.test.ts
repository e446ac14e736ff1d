import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actorIn, coreOf, engines, testStore, type TestDb } from '../support/engines';
import { runWorkload } from './workload';

const SECONDS = Number(process.env.RETRACT_STRESS_SECONDS ?? 8);
const WORKERS = Number(process.env.RETRACT_STRESS_WORKERS ?? 8);
/**
 * The contention budget (issue 16's target for `npm run test:stress`, which sets the duration): serialization
 * retries spent per operation, across all of them. The short run inside `npm test` checks every other
 * assertion; the budget is asserted where it was set, and its misses are published in FINDINGS §5.2.
 */
const MAX_RETRIES_PER_OPERATION = process.env.RETRACT_STRESS_SECONDS ? 0.2 : Infinity;

/** The server engines of this run: PGlite runs transactions one at a time, so the concurrent workload needs a server. */
const SERVERS = engines().filter((e) => e !== 'pglite');

/** The concurrent invariant workload, on PostgreSQL and on Citus. */
describe.runIf(SERVERS.length > 0)('concurrent workload', () =>
  describe.each(SERVERS)('on %s', (engine) => {
    let t: TestDb;
    beforeAll(async () => {
      t = await testStore(engine, { poolSize: WORKERS + 4 });
    });
    afterAll(async () => t?.close());

    it(`${WORKERS} workers for ${SECONDS} s of mixed operations leave zero invariant violations`, async () => {
      const core = coreOf(t.store);
      const actor = await actorIn(t.store, 'stress');
      const r = await runWorkload(core, actor, { workers: WORKERS, seconds: SECONDS });
      fs.mkdirSync('results', { recursive: true });
      fs.writeFileSync(
        `results/stress-${engine}.json`,
        JSON.stringify({ at: new Date().toISOString(), ...r }, null, 2),
      );
      console.log(
        `stress (${engine}): ${WORKERS} workers × ${SECONDS} s: ${Object.values(r.ops).reduce((a, b) => a + b, 0)} operations, ` +
          `${r.serializationRetries} serialization retries, ${r.givenUp} given up after the retry bound (${r.outcomes['retract:CONFLICT'] ?? 0} of them retractions); ` +
          `${r.extra.retractions} retractions, ${r.extra.reversals} reversals, ${r.violations.length} violations`,
      );
      // Where the retries went, so the next change to the lock policy or a statement starts from data.
      const byOp = Object.entries(r.retriesBy.op).sort((x, y) => y[1] - x[1]);
      console.log(
        `stress retries by operation: ${byOp.map(([op, n]) => `${op} ${n} (${(n / (r.ops[op] ?? 1)).toFixed(3)}/op of ${r.ops[op] ?? 0})`).join(', ') || 'none'}`,
      );
      console.log(
        `stress retries by reason: ${
          Object.entries(r.retriesBy.reason)
            .sort((x, y) => y[1] - x[1])
            .map(([why, n]) => `${n} × ${why}`)
            .join('; ') || 'none'
        }`,
      );
      console.log(JSON.stringify({ ops: r.ops, outcomes: r.outcomes, extra: r.extra }));
      expect(r.unexpected).toEqual([]);
      expect(r.violations).toEqual([]);
      expect(r.outcomes['retractAgain:RETRACTED-TWICE'] ?? 0).toBe(0);
      expect(r.extra.effects_with_two_reversals).toBe(0);
      expect(r.extra.duplicate_reversal_keys).toBe(0);
      expect(r.extra.cancelled_and_executed).toBe(0);
      expect(r.extra.reversals).toBe(r.extra.executed_under_retracted);
      expect(r.extra.retractions).toBeGreaterThan(0);
      // A retraction is what stops money moving: it must not lose to the turns around it (the fleet
      // lock, src/store/tx.ts), and contention must stay cheap for everyone.
      const operations = Object.values(r.ops).reduce((a, b) => a + b, 0);
      expect(r.outcomes['retract:CONFLICT'] ?? 0, 'retractions given up after the retry bound').toBe(0);
      expect(r.serializationRetries / operations, 'serialization retries per operation').toBeLessThanOrEqual(
        MAX_RETRIES_PER_OPERATION,
      );
    });
  }),
);
