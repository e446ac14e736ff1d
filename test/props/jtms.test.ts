import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { actorIn, coreOf, engines, type TestDb } from '../support/engines';
import { coverage, resetTables, runScenario, scenarioArb } from './harness';
import { storeSuite } from '../support/helpers';

/**
 * Model-based property: random DAGs with several justifications per belief, effects in every state,
 * retractions, previews, confirmations, reinstatements and restored effects, checked command by command against test/props/model.ts.
 * RETRACT_PROPS_RUNS sets the number of runs (npm run test:props: 1000; npm test: 25);
 * RETRACT_PROPS_SEED and RETRACT_PROPS_PATH replay a failure fast-check printed.
 */
const RUNS = Number(process.env.RETRACT_PROPS_RUNS ?? 25);
const MAX_COMMANDS = Number(process.env.RETRACT_PROPS_COMMANDS ?? 25);
const SEED = process.env.RETRACT_PROPS_SEED ? Number(process.env.RETRACT_PROPS_SEED) : undefined;
const PATH = process.env.RETRACT_PROPS_PATH || undefined;
/** Tables are emptied every this many runs: the store stays small, and runs still share it with other fleets (RLS isolates them). */
const RESET_EVERY = 20;

describe.each(engines())('JTMS reference model on %s', (engine) => {
  let t: TestDb;
  storeSuite(engine, {}, (s) => (t = s.t));

  it(`the store follows the reference model, command by command, over ${RUNS} random runs of up to ${MAX_COMMANDS} commands`, async () => {
    const core = coreOf(t.store);
    let run = 0;
    const started = Date.now();
    await fc.assert(
      fc.asyncProperty(scenarioArb(MAX_COMMANDS), async (cmds) => {
        if (run % RESET_EVERY === 0) await resetTables(t.store);
        run++;
        const actor = await actorIn(t.store, `f${run}`);
        try {
          await runScenario({ store: t.store, core, actor }, cmds);
        } catch (e) {
          // checkInvariants sees every fleet: a failed run's rows must not fail the shrinking runs after it.
          await resetTables(t.store);
          throw e;
        }
      }),
      { numRuns: RUNS, seed: SEED, path: PATH, endOnFailure: false },
    );
    const table = [...coverage.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, n]) => `  ${k.padEnd(48)} ${n}`)
      .join('\n');
    if (RUNS >= 500) {
      // Enough runs must have reached every common case the rules distinguish, or the property proves little.
      // (Rarer ones — completing or failing a reached effect, confirming, a second reach of a reversed
      // effect — are in the table and pinned by regressions.test.ts.)
      const needed = [
        'justify: added',
        'justify: CONFLICT (cycle)',
        'justify: CONFLICT (premise retracted)',
        'justify: CONFLICT (belief retracted)',
        'assert: derived premiseRetracted',
        'propose: premise retracted',
        'retract: cascade',
        'retract: survivors',
        'retract: cancelled pending',
        'retract: reached executing',
        'retract: reversal recorded',
        'retract: again (no-op)',
        'retract: right after its preview (created)',
        'complete: executed',
        'confirm: CONFLICT (unreachable)',
        'reinstate: reinstated',
        'reinstate: cascade back',
        'reinstate: reversal voided',
        'reinstate: again (no-op)',
      ];
      expect(
        needed.filter((k) => !coverage.get(k)),
        `cases never reached:\n${table}`,
      ).toEqual([]);
    }
    console.log(
      `[props] ${engine}: ${RUNS} runs (${run} executions incl. shrinking) of up to ${MAX_COMMANDS} commands in ${((Date.now() - started) / 1000).toFixed(1)} s\n${table}`,
    );
  }, 7_200_000);
});
