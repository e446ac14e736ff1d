import fc from 'fast-check';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { checkInvariants } from '../../src/invariants/check';
import { reinstateRetraction, restoreEffect } from '../../src/reinstatement/reinstatement.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import type { Store } from '../../src/store/engine';
import { readTx } from '../../src/store/tx';
import { actorIn, coreOf, engines, type TestDb } from '../support/engines';
import { resetTables, runScenario, scenarioArb } from './harness';
import { storeSuite } from '../support/helpers';

/**
 * Retract, then reinstate, with nothing in between: over a random store (the property suite's
 * scenarios), retracting any ACTIVE belief and reinstating that retraction, then restoring every
 * effect it lists as restorable, gives back exactly the beliefs (status, retraction, depth) and
 * effects (status, cancelled and reached marks) there were before; every reversal the retraction
 * recorded is VOIDED. RETRACT_PROPS_RUNS sets the number of runs, as for jtms.test.ts.
 */
const RUNS = Number(process.env.RETRACT_PROPS_RUNS ?? 25);
const RESET_EVERY = 20;

async function graph(store: Store, fleet: string) {
  return readTx(store, fleet, async (tx) => ({
    beliefs: await tx
      .selectFrom('beliefs')
      .select(['id', 'claim_key', 'status', 'retraction_id', 'retraction_depth', 'retracted_at'])
      .orderBy('id')
      .execute(),
    effects: await tx
      .selectFrom('effects')
      .select(['id', 'status', 'cancelled_by', 'reached_by'])
      .orderBy('id')
      .execute(),
  }));
}

describe.each(engines())('retract then reinstate on %s', (engine) => {
  let t: TestDb;
  storeSuite(engine, {}, (s) => (t = s.t));

  it(`returns the graph to exactly its prior state, over ${RUNS} random stores`, async () => {
    const core = coreOf(t.store);
    let run = 0;
    let cascades = 0;
    await fc.assert(
      fc.asyncProperty(scenarioArb(15), fc.nat({ max: 1000 }), async (cmds, pick) => {
        if (run % RESET_EVERY === 0) await resetTables(t.store);
        run++;
        const actor = await actorIn(t.store, `rt${run}`);
        try {
          const r = await runScenario({ store: t.store, core, actor }, cmds);
          const active = r.m.beliefs.map((b, i) => (b.status === 'ACTIVE' ? i : -1)).filter((i) => i >= 0);
          if (active.length === 0) return;
          // Three runs in four retract a belief whose retraction cascades (by the model's preview) where the store has
          // one, the fourth any ACTIVE belief: the property meets cascades by construction, not by the luck of the draw.
          const cascading = active.filter((i) => r.m.preview(i).beliefs.length > 1);
          const from = pick % 4 !== 0 && cascading.length > 0 ? cascading : active;
          const b = from[Math.floor(pick / 4) % from.length]!;
          const before = await graph(t.store, actor.fleet);
          const { retractionId } = await retractBelief(core, actor, { beliefId: r.beliefId[b]!, reason: 'round trip' });
          const fell = (
            await sql<{ n: number }>`SELECT beliefs_retracted AS n FROM retractions WHERE id = ${retractionId}`.execute(
              t.store.db,
            )
          ).rows[0]!.n;
          if (fell > 1) cascades++;
          const ri = await reinstateRetraction(core, actor, { retractionId, reason: 'it was true' });
          expect(ri.kind).toBe('reinstated');
          const listed = await readTx(t.store, actor.fleet, (tx) =>
            tx
              .selectFrom('reinstatements')
              .select('restorable_effect_ids')
              .where('id', '=', ri.reinstatementId)
              .executeTakeFirstOrThrow(),
          );
          for (const e of listed.restorable_effect_ids) await restoreEffect(core, actor, { effectId: String(e) });
          const after = await graph(t.store, actor.fleet);
          expect(after.beliefs).toEqual(before.beliefs);
          expect(after.effects).toEqual(before.effects);
          const reversals = await readTx(t.store, actor.fleet, (tx) =>
            tx.selectFrom('reversals').select('status').where('retraction_id', '=', retractionId).execute(),
          );
          expect(reversals.every((x) => x.status === 'VOIDED')).toBe(true);
          expect(await checkInvariants(t.store)).toEqual([]);
        } catch (e) {
          await resetTables(t.store);
          throw e;
        }
      }),
      { numRuns: RUNS, endOnFailure: false },
    );
    // Enough of the runs must have taken something down beyond the root, or the property proves little.
    expect(cascades).toBeGreaterThan(RUNS / 10);
    console.log(
      `[props] ${engine}: retract-then-reinstate over ${RUNS} runs (${run} executions), ${cascades} with a cascade`,
    );
  }, 7_200_000);
});
