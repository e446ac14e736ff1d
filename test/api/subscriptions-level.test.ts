import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gid } from '../../src/kernel/ids';
import { SCOPES } from '../../src/agent/scopes';
import { LEVEL_BATCH, tailStats } from '../../src/event/tailer';
import { actorIn, engines, expectInvariants } from '../support/engines';
import { belief, passportStory } from '../support/story';
import WebSocket from 'ws';
import { RetractClient, type RetractionEvent } from '../../src/client/node';
import { gql, ok, subscribeWs } from '../support/api-client';
import { type ApiServer, agentWith, startApiServer, type TestAgent } from '../support/api-server';

interface Ev {
  __typename: string;
  cursor: string;
  retraction: { id: string };
  depth?: number;
  count?: number;
  belief?: { id: string };
  beliefs?: Array<{ id: string; status: string }>;
  effect?: { id: string };
  effects?: Array<{ id: string; status: string }>;
  reversal?: { id: string };
  reversals?: Array<{ id: string; status: string }>;
  totals?: { beliefsRetracted: number };
}

const EVENTS = /* GraphQL */ `
  subscription ($after: String, $granularity: RetractionEventGranularity) {
    retractionEvents(after: $after, granularity: $granularity) {
      __typename
      cursor
      retraction {
        id
      }
      ... on BeliefRetracted {
        depth
        belief {
          id
        }
      }
      ... on EffectCancelled {
        effect {
          id
        }
      }
      ... on ReversalRecorded {
        reversal {
          id
        }
      }
      ... on BeliefsRetracted {
        depth
        count
        beliefs {
          id
          status
        }
      }
      ... on EffectsCancelled {
        count
        effects {
          id
          status
        }
      }
      ... on ReversalsRecorded {
        count
        reversals {
          id
          status
        }
      }
      ... on RetractionCommitted {
        totals {
          beliefsRetracted
        }
      }
    }
  }
`;

/** The items of a stream, one entry per belief/effect/reversal, whichever granularity carried them. */
function items(evs: Ev[]): string[] {
  return evs.flatMap((e) => {
    if (e.beliefs) return e.beliefs.map((b) => `belief ${b.id} @${e.depth}`);
    if (e.effects) return e.effects.map((x) => `effect ${x.id}`);
    if (e.reversals) return e.reversals.map((x) => `reversal ${x.id}`);
    if (e.belief) return [`belief ${e.belief.id} @${e.depth}`];
    if (e.effect) return [`effect ${e.effect.id}`];
    if (e.reversal) return [`reversal ${e.reversal.id}`];
    return [e.__typename];
  });
}

/**
 * granularity LEVEL: a cascade whose level 1 holds 2.4 × LEVEL_BATCH beliefs arrives as one
 * BeliefsRetracted per LEVEL_BATCH of a level, carrying exactly the items (in the same order) the
 * per-belief stream carries; its cursors are the per-belief stream's cursors at batch ends, and a
 * cursor of either granularity resumes the other with no loss and no duplicate.
 */
describe.each(engines())('retractionEvents granularity LEVEL on %s', (engine) => {
  let s: ApiServer;
  let agent: TestAgent;
  let origin: string;
  let rootId: string;
  let wide: number;
  const sub = (vars: Record<string, unknown>) => subscribeWs<{ retractionEvents: Ev }>(s.ws, EVENTS, vars, agent.token);
  const evs = (c: ReturnType<typeof sub>) => c.events.map((e) => e.retractionEvents);
  const done = (c: ReturnType<typeof sub>) => evs(c).some((e) => e.__typename === 'RetractionCommitted');

  beforeAll(async () => {
    s = await startApiServer(engine);
    const actor = await actorIn(s.db.store, 'acme');
    agent = await agentWith(s.db.store, 'acme', SCOPES, 'level-watcher');
    // The passport story gives the cascade an effect to cancel and reversals to record.
    const st = await passportStory(s.core, actor, 'customer:9001');
    rootId = st.passport.id;
    wide = Math.round(LEVEL_BATCH * 2.4);
    for (let i = 0; i < wide; i++) await belief(s.core, actor, `wide/${i}`, [st.passport]);
    const probe = sub({});
    // A live subscriber's last cursor before the measured retraction: retract probes until it sees one.
    for (let attempt = 0; !done(probe); attempt++) {
      const p = await belief(s.core, actor, `probe/${attempt}`);
      await gql(
        s.http,
        'mutation($b: ID!) { retractBelief(input: { beliefId: $b, reason: "probe" }) { id } }',
        { b: gid('Belief', p.id) },
        agent.token,
      );
      await probe.until(done, 3_000, 'the probe').catch(() => {});
      if (attempt > 3) throw new Error('the probe subscriber never went live');
    }
    origin = evs(probe).at(-1)!.cursor;
    await probe.close();
  }, 120_000);
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  it('one event per level batch, the same items in the same order as per-belief events, and cursors that resume either', async () => {
    const each = sub({ after: origin });
    const level = sub({ after: origin, granularity: 'LEVEL' });
    // Both connections acknowledged before the retraction holds PGlite's one connection for seconds
    // (each resumes from `origin`, so nothing can be missed either way): a connection_init not read
    // within graphql-ws's 3 s is closed with 4408, which is not what this test is about.
    await Promise.all([each.connected, level.connected]);
    const rid = ok(
      await gql(
        s.http,
        'mutation($b: ID!) { retractBelief(input: { beliefId: $b, reason: "forged" }) { id } }',
        { b: gid('Belief', rootId) },
        agent.token,
      ),
    ).retractBelief.id as string;
    await each.until(done, 20_000, 'the per-belief stream');
    await level.until(done, 20_000, 'the level stream');
    const E = evs(each);
    const L = evs(level);
    expect(each.errors).toEqual([]);
    expect(level.errors).toEqual([]);
    expect(L.every((e) => e.retraction.id === rid)).toBe(true);

    // The passport story's own cascade is 4 beliefs (depths 0, 1, 1, 2); `wide` more hang at depth 1.
    const fell = E.filter((e) => e.__typename === 'BeliefRetracted');
    expect(fell.length).toBe(4 + wide);
    expect(E.at(-1)!.totals!.beliefsRetracted).toBe(4 + wide);
    const depth1 = fell.filter((e) => e.depth === 1).length;
    const batches = L.filter((e) => e.__typename === 'BeliefsRetracted');
    expect(batches.map((e) => [e.depth, e.count])).toEqual([
      [0, 1],
      ...Array.from({ length: Math.ceil(depth1 / LEVEL_BATCH) }, (_, i) => [
        1,
        Math.min(LEVEL_BATCH, depth1 - i * LEVEL_BATCH),
      ]),
      [2, 1],
    ]);
    expect(L.map((e) => e.__typename)).toEqual([
      'RetractionStarted',
      ...batches.map(() => 'BeliefsRetracted'),
      'EffectsCancelled',
      'ReversalsRecorded',
      'RetractionCommitted',
    ]);
    expect(
      batches.every((b) => b.count === b.beliefs!.length && b.beliefs!.every((x) => x.status === 'RETRACTED')),
    ).toBe(true);
    expect(L.find((e) => e.__typename === 'ReversalsRecorded')!.count).toBe(2);
    expect(L.find((e) => e.__typename === 'EffectsCancelled')!.effects!.map((x) => x.status)).toEqual(['CANCELLED']);
    expect(items(L)).toEqual(items(E));

    // Every LEVEL cursor is the per-belief cursor of its batch's last item.
    const cursorsOfEach = new Set(E.map((e) => e.cursor));
    expect(L.every((e) => cursorsOfEach.has(e.cursor))).toBe(true);
    expect(L.at(-1)!.cursor).toBe(E.at(-1)!.cursor);

    // Resume LEVEL from a per-belief cursor in the middle of a batch: the rest of that batch, then on.
    const mid = fell.findIndex((e) => e.depth === 1) + Math.floor(LEVEL_BATCH * 1.5);
    const fromMid = sub({ after: fell[mid]!.cursor, granularity: 'LEVEL' });
    await fromMid.until(done, 20_000, 'the resumed level stream');
    const M = evs(fromMid);
    expect(M[0]!.count).toBe(LEVEL_BATCH - (Math.floor(LEVEL_BATCH * 1.5) % LEVEL_BATCH) - 1);
    expect(items(M)).toEqual(items(E.slice(E.indexOf(fell[mid]!) + 1)));

    // Resume per-belief from a LEVEL cursor: exactly what follows that batch.
    const second = batches[2]!;
    const fromBatch = sub({ after: second.cursor });
    await fromBatch.until(done, 20_000, 'the resumed per-belief stream');
    expect(evs(fromBatch)).toEqual(E.slice(E.findIndex((e) => e.cursor === second.cursor) + 1));
    await Promise.all([each.close(), level.close(), fromMid.close(), fromBatch.close()]);

    // The typed client asks for the same stream and gets the same batches.
    const client = new RetractClient({ url: s.http, token: agent.token, webSocketImpl: WebSocket });
    const got: RetractionEvent[] = [];
    const stop = client.onRetractionEvents((e) => got.push(e), { after: origin, granularity: 'LEVEL' });
    for (let i = 0; i < 200 && !got.some((e) => e.__typename === 'RetractionCommitted'); i++)
      await new Promise((r) => setTimeout(r, 50));
    stop();
    await client.close();
    expect(got.map((e) => [e.__typename, 'count' in e ? e.count : null, e.cursor])).toEqual(
      L.map((e) => [e.__typename, e.count ?? null, e.cursor]),
    );
    expect(got.flatMap((e) => ('beliefs' in e ? e.beliefs.map((b) => b.id) : []))).toEqual(
      batches.flatMap((b) => b.beliefs!.map((x) => x.id)),
    );
  }, 120_000);

  it('20 live subscribers of one fleet woken by one commit share their log reads, and each still receives the whole retraction', async () => {
    const subs = Array.from({ length: 20 }, () => sub({ granularity: 'LEVEL' }));
    const actor = { fleet: 'acme', agentId: agent.id };
    // Live = every one has seen a retraction committed after it subscribed.
    let rid = '';
    for (let attempt = 0; !subs.every(done); attempt++) {
      if (attempt > 5) throw new Error('the subscribers never went live');
      const p = await belief(s.core, actor, `share-probe/${attempt}`);
      rid = ok(
        await gql(
          s.http,
          'mutation($b: ID!) { retractBelief(input: { beliefId: $b, reason: "probe" }) { id } }',
          { b: gid('Belief', p.id) },
          agent.token,
        ),
      ).retractBelief.id;
      await Promise.all(subs.map((c) => c.until(done, 3_000, 'a probe').catch(() => {})));
    }
    const seen = subs.map((c) => evs(c).length);
    const reads = tailStats.reads;
    const p = await belief(s.core, actor, 'share-probe/measured');
    const measured = ok(
      await gql(
        s.http,
        'mutation($b: ID!) { retractBelief(input: { beliefId: $b, reason: "measured" }) { id } }',
        { b: gid('Belief', p.id) },
        agent.token,
      ),
    ).retractBelief.id as string;
    expect(measured).not.toBe(rid);
    const got = (c: (typeof subs)[number], i: number) =>
      evs(c)
        .slice(seen[i])
        .filter((e) => e.retraction.id === measured);
    await Promise.all(
      subs.map((c, i) =>
        c.until(() => got(c, i).some((e) => e.__typename === 'RetractionCommitted'), 10_000, 'the measured retraction'),
      ),
    );
    for (const [i, c] of subs.entries())
      expect(got(c, i).map((e) => e.__typename)).toEqual([
        'RetractionStarted',
        'BeliefsRetracted',
        'RetractionCommitted',
      ]);
    // Unshared, 20 subscribers would read at least 20 times (one read each that finds the rows).
    expect(tailStats.reads - reads).toBeLessThan(10);
    await Promise.all(subs.map((c) => c.close()));
  }, 60_000);
});
