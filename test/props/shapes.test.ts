import fc from 'fast-check';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { Actor } from '../../src/core';
import { START } from '../../src/event/event.repository';
import { type StreamEvent, Waker, retractionEvents } from '../../src/event/tailer';
import { previewRetraction, retractBelief } from '../../src/retraction/retraction.service';
import type { Store } from '../../src/store/engine';
import { actorIn, coreOf, engines, expectInvariants, type TestDb } from '../support/engines';
import { resetTables } from './harness';
import { type MBelief, Model } from './model';
import { storeSuite } from '../support/helpers';

/**
 * Deep and wide derivation graphs against the reference JTMS (model.ts), built by bulk SQL (the
 * command-by-command suite cannot reach depth 1000 or fan-out 100k in reasonable time):
 *  - `chain`: each belief on the previous one;
 *  - `comb`: a chain with a side branch at every node;
 *  - `survivor`: a chain whose belief k also rests on an outside anchor, so it and everything
 *    below it stand (and a side branch of the anchor's justification falls with the chain above);
 *  - `fan`: one premise, every other belief directly on it, some of them also on an anchor.
 * Every run adds random extra justifications among earlier beliefs (diamonds, uneven arms), then
 * previews and retracts the root and holds the store to the model: every belief's status and
 * depth, the survivors, the receipt, the event stream (each belief once, in cascade order, with
 * its depth), and every invariant. RETRACT_PROPS_SHAPES_RUNS sets the runs (default 6),
 * RETRACT_PROPS_DEPTH the longest chain (default 400); RETRACT_PROPS_FANOUT (e.g. 100000) adds one
 * run of that fan-out — opt-in, as it takes minutes on PGlite.
 */
const RUNS = Number(process.env.RETRACT_PROPS_SHAPES_RUNS ?? 6);
const DEPTH = Number(process.env.RETRACT_PROPS_DEPTH ?? 400);
const FANOUT = Number(process.env.RETRACT_PROPS_FANOUT ?? 0);

type Kind = 'chain' | 'comb' | 'survivor' | 'fan';
interface Shape {
  kind: Kind;
  n: number;
  /** Where the survivor (or, for a fan, every k-th dependent) holds a second justification on an anchor. */
  k: number;
  /** Extra justifications [belief, premise] between beliefs (the premise earlier, so the graph stays acyclic). */
  extra: Array<[number, number]>;
}

const shapeArb: fc.Arbitrary<Shape> = fc
  .record({
    kind: fc.constantFrom<Kind>('chain', 'comb', 'survivor', 'fan'),
    n: fc.integer({ min: 2, max: DEPTH }),
    k: fc.nat(),
    extra: fc.array(fc.tuple(fc.nat(), fc.nat()), { maxLength: 8 }),
  })
  .map((s) => ({ ...s, k: 1 + (s.k % Math.max(1, s.n - 1)) }));

/** The model's beliefs for a shape: index 0 the root, 1…n-1 the graph, then one grounded anchor. */
function modelOf(s: Shape): Model {
  const m = new Model();
  const anchor = s.n;
  const on = (i: number): number[][] => {
    if (i === 0) return [];
    const parent = s.kind === 'fan' ? 0 : s.kind === 'comb' && i % 2 === 0 && i >= 2 ? i - 2 : i - 1;
    const js = [[parent]];
    if ((s.kind === 'survivor' && i === s.k) || (s.kind === 'fan' && i % s.k === 0)) js.push([anchor]);
    return js;
  };
  for (let i = 0; i <= s.n; i++) {
    const b: MBelief = {
      claimKey: `shape/${i}`,
      value: i,
      grounded: i === 0 || i === anchor,
      status: 'ACTIVE',
      justifications: on(i),
      retraction: null,
      depth: null,
    };
    if (i === anchor) b.justifications = [];
    m.beliefs.push(b);
  }
  for (const [x, y] of s.extra) {
    const b = 1 + (x % (s.n - 1 || 1));
    const p = y % b;
    if (b >= s.n || m.beliefs[b]!.grounded || m.hasJustification(b, [p])) continue;
    m.beliefs[b]!.justifications.push([p]);
  }
  return m;
}

/** Writes the model's graph into the fleet as the owner, in a handful of statements; returns the ids by model index. */
async function load(store: Store, actor: Actor, m: Model, tag: string): Promise<string[]> {
  const keys = m.beliefs.map((b) => `${tag}/${b.claimKey}`);
  const vec = `[${Array.from({ length: 512 }, (_, i) => (i === 0 ? 1 : 0)).join(',')}]`;
  return store.db.transaction().execute(async (tx) => {
    await sql`INSERT INTO claims (fleet_id, key) SELECT ${actor.fleet}, k FROM unnest(${keys}::text[]) k`.execute(tx);
    const ids = (
      await sql<{ id: string }>`
      INSERT INTO beliefs (fleet_id, claim_key, statement, value, author_id, grounded, embedding)
      SELECT ${actor.fleet}, k, 'shape belief', to_jsonb(o), ${actor.agentId}, g, ${vec}::vector
        FROM unnest(${keys}::text[], ${m.beliefs.map((b) => b.grounded)}::boolean[]) WITH ORDINALITY AS x(k, g, o)
       ORDER BY o RETURNING id::text AS id`.execute(tx)
    ).rows.map((r) => r.id);
    const js = m.beliefs.flatMap((b, i) => b.justifications.map((ps) => ({ b: ids[i]!, ps: ps.map((p) => ids[p]!) })));
    const jids = (
      await sql<{ id: string }>`
      INSERT INTO justifications (fleet_id, belief_id, created_by)
      SELECT ${actor.fleet}, b, ${actor.agentId} FROM unnest(${js.map((j) => j.b)}::bigint[]) WITH ORDINALITY AS x(b, o)
       ORDER BY o RETURNING id::text AS id`.execute(tx)
    ).rows.map((r) => r.id);
    const edges = js.flatMap((j, k) => j.ps.map((p) => [jids[k]!, p] as const));
    await sql`INSERT INTO justification_premises (justification_id, premise_id, fleet_id)
      SELECT j, p, ${actor.fleet} FROM unnest(${edges.map((e) => e[0])}::bigint[], ${edges.map((e) => e[1])}::bigint[]) AS x(j, p)`.execute(
      tx,
    );
    await sql`INSERT INTO events (fleet_id, type, ids, actor_id) VALUES (${actor.fleet}, 'BeliefAsserted', ${ids}::bigint[], ${actor.agentId})`.execute(
      tx,
    );
    return ids;
  });
}

/** The retraction's events as a subscriber receives them, from the log's start to its RetractionCommitted. */
async function streamed(store: Store, fleet: string): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  const stop = new AbortController();
  for await (const e of retractionEvents(store, new Waker(store), fleet, START, stop.signal, 'BELIEF', 50)) {
    out.push(e);
    if (e.__typename === 'RetractionCommitted') stop.abort();
  }
  return out;
}

async function check(t: TestDb, s: Shape, fleet: string): Promise<void> {
  const core = coreOf(t.store);
  const actor = await actorIn(t.store, fleet);
  const m = modelOf(s);
  const ids = await load(t.store, actor, m, fleet);
  const plan = m.preview(0);
  const index = new Map(ids.map((id, i) => [id, i]));

  const preview = await previewRetraction(core, actor, { beliefId: ids[0]!, first: 500 });
  expect(preview.totals.beliefsRetracted).toBe(plan.beliefs.length);
  expect(preview.beliefs.items.map((x) => [index.get(x.id), x.depth])).toEqual(
    plan.beliefs.slice(0, 500).map((x) => [x.belief, x.depth]),
  );
  expect(preview.survivors.map((x) => index.get(x)).sort((a, b) => a! - b!)).toEqual(plan.survivors);

  const { retractionId } = await retractBelief(core, actor, { beliefId: ids[0]!, reason: `shape ${s.kind}` });
  m.retract(0);
  const rows = await t.store.db.transaction().execute(async (tx) => {
    await sql`SET LOCAL row_security = off`.execute(tx);
    return (
      await sql<{ id: string; status: string; depth: number | null; rid: string | null }>`
      SELECT id::text, status, retraction_depth AS depth, retraction_id::text AS rid FROM beliefs WHERE id = ANY(${ids}::bigint[]) ORDER BY beliefs.id`.execute(
        tx,
      )
    ).rows;
  });
  expect(rows.map((r) => [index.get(r.id), r.status, r.depth, r.rid === null ? null : 0])).toEqual(
    m.beliefs.map((b, i) => [i, b.status, b.depth, b.retraction]),
  );
  const events = (await streamed(t.store, fleet)).filter((e) => e.retractionId === retractionId);
  expect(
    events.filter((e) => e.__typename === 'BeliefRetracted').map((e) => [index.get(e.beliefId!), e.depth]),
  ).toEqual(plan.beliefs.map((x) => [x.belief, x.depth]));
  expect(events.at(-1)!.totals!.beliefsRetracted).toBe(plan.beliefs.length);
}

describe.each(engines())('deep and wide cascades against the reference model on %s', (engine) => {
  let t: TestDb;
  let run = 0;
  storeSuite(engine, {}, (s) => (t = s.t));

  it(`${RUNS} random chains, combs, chains with a survivor and fans of up to ${DEPTH} beliefs, with extra justifications`, async () => {
    await fc.assert(
      fc.asyncProperty(shapeArb, async (s) => {
        await resetTables(t.store);
        await check(t, s, `shape${run++}`);
        await expectInvariants(t.store);
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
  }, 1_800_000);

  it.runIf(FANOUT > 0)(
    `one premise with ${FANOUT} direct dependents, a tenth of them also on an anchor`,
    async () => {
      await resetTables(t.store);
      await check(t, { kind: 'fan', n: FANOUT, k: 10, extra: [] }, 'fanout');
      await expectInvariants(t.store);
    },
    3_600_000,
  );
});
