import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gid } from '../../src/kernel/ids';
import { SCOPES } from '../../src/agent/scopes';
import type { Store } from '../../src/store/engine';
import { actorIn, engines, expectInvariants } from '../support/engines';
import { belief, passportStory } from '../support/story';
import { assertBelief } from '../../src/belief/belief.service';
import {
  gql,
  ok,
  RETRACTION_EVENTS,
  streamed,
  subscribeSse,
  subscribeWs,
  type StreamedEvent,
} from '../support/api-client';
import { type ApiServer, agentWith, BOOTSTRAP_TOKEN, startApiServer, type TestAgent } from '../support/api-server';

type Sub = ReturnType<typeof subscribeWs<{ retractionEvents: StreamedEvent }>>;

const committed = (rid: string) => (c: Sub) =>
  streamed(c).some((e) => e.__typename === 'RetractionCommitted' && e.retraction.id === rid);

/** A free TCP port on 127.0.0.1 (for a server process that takes PORT from its environment). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * retractionEvents over graphql-ws and SSE against a listening server: the passport story's cascade
 * step by step, resume after a cursor across a disconnect with no loss and no duplicate, "from now"
 * without a cursor, a subscriber that never reads holding up no one, and (PostgreSQL) events
 * committed through a second server process reaching the first server's subscribers.
 */
describe.each(engines())('retractionEvents on %s', (engine) => {
  let s: ApiServer;
  let agent: TestAgent;
  let notices = 0;
  let origin: string;
  const stories: Record<string, Awaited<ReturnType<typeof passportStory>>> = {};
  const retract = async (beliefId: string, reason: string, url = s.http) =>
    ok(
      await gql(
        url,
        'mutation($b: ID!, $r: String!) { retractBelief(input: { beliefId: $b, reason: $r }) { id } }',
        { b: gid('Belief', beliefId), r: reason },
        agent.token,
      ),
    ).retractBelief.id as string;
  const sub = (after?: string | null) =>
    subscribeWs<{ retractionEvents: StreamedEvent }>(s.ws, RETRACTION_EVENTS, after ? { after } : {}, agent.token);

  beforeAll(async () => {
    // The app's store counts the cross-process wake-ups its LISTEN receives.
    s = await startApiServer(engine, {
      wrapStore: (st: Store) => ({
        ...st,
        listen: (cb: () => void) =>
          st.listen(() => {
            notices++;
            cb();
          }),
      }),
    });
    const actor = await actorIn(s.db.store, 'acme');
    agent = await agentWith(s.db.store, 'acme', SCOPES, 'streamer');
    for (const c of ['4411', '4412', '4413', '4414']) stories[c] = await passportStory(s.core, actor, `customer:${c}`);
    // A deterministic starting point: the last cursor of a probe retraction seen by a live subscriber.
    const first = sub();
    for (let attempt = 0; ; attempt++) {
      const probe = await belief(s.core, actor, `probe/${attempt}`);
      const rid = await retract(probe.id, 'probe');
      try {
        await first.until(committed(rid), 3_000, 'the probe retraction');
        break;
      } catch (e) {
        if (attempt > 3) throw e;
      }
    }
    origin = streamed(first).at(-1)!.cursor;
    await first.close();
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  let reference: Sub;
  let ridA: string;
  /** The cursor of the newest event seen so far (set by the slow-subscriber test). */
  let latest: () => string = () => origin;
  let lastRid = '';

  it('the passport story over graphql-ws: RetractionStarted, BeliefRetracted in depth order, EffectCancelled, ReversalRecorded, RetractionCommitted', async () => {
    reference = sub(origin);
    const st = stories['4411']!;
    ridA = await retract(st.passport.id, 'passport came back forged');
    await reference.until(committed(ridA), 10_000, 'RetractionCommitted');
    const ev = streamed(reference);
    expect(ev.every((e) => e.retraction.id === ridA)).toBe(true);
    expect(ev.map((e) => e.__typename)).toEqual([
      'RetractionStarted',
      'BeliefRetracted',
      'BeliefRetracted',
      'BeliefRetracted',
      'BeliefRetracted',
      'EffectCancelled',
      'ReversalRecorded',
      'ReversalRecorded',
      'RetractionCommitted',
    ]);
    const fallen = ev.filter((e) => e.__typename === 'BeliefRetracted');
    expect(fallen.map((e) => e.depth)).toEqual([0, 1, 1, 2]);
    expect(fallen[0]!.belief!.id).toBe(gid('Belief', st.passport.id));
    const [identity, refundEligible, kycTier] = st.derived;
    expect(fallen.map((e) => e.belief!.id).sort()).toEqual(
      [st.passport, identity!, refundEligible!, kycTier!].map((b) => gid('Belief', b.id)).sort(),
    );
    expect(fallen.find((e) => e.depth === 2)!.belief!.id).toBe(gid('Belief', refundEligible!.id));
    expect(fallen.every((e) => e.belief!.status === 'RETRACTED')).toBe(true);
    const cancelled = ev.find((e) => e.__typename === 'EffectCancelled')!;
    expect(cancelled.effect).toEqual({ id: gid('Effect', st.pending.id), status: 'CANCELLED', kind: 'payout' });
    const reversals = ev
      .filter((e) => e.__typename === 'ReversalRecorded')
      .map((e) => [e.reversal!.effect.kind, e.reversal!.status, e.reversal!.amount!.amountMinor]);
    expect(reversals.sort()).toEqual([
      ['card_charge', 'UNREACHABLE', 8_900],
      ['refund', 'OWED', 124_000],
    ]);
    expect(ev.at(-1)!.totals).toEqual({
      beliefsRetracted: 4,
      effectsCancelled: 1,
      effectsReached: 2,
      reversalsOwed: 1,
      unreachable: 1,
      exposure: [{ amountMinor: 132_900, currency: 'USD' }],
      owed: [{ amountMinor: 124_000, currency: 'USD' }],
      unreachableAmount: [{ amountMinor: 8_900, currency: 'USD' }],
      settled: [{ amountMinor: 0, currency: 'USD' }],
    });
    expect(new Set(ev.map((e) => e.cursor)).size).toBe(ev.length);
    for (let i = 1; i < ev.length; i++) expect(Date.parse(ev[i]!.at)).toBeGreaterThanOrEqual(Date.parse(ev[i - 1]!.at));
    expect(reference.errors).toEqual([]);
  });

  it('resume: disconnect mid-stream, another retraction commits meanwhile, reconnect after the last cursor — no loss, no duplicate', async () => {
    const first = sub(origin);
    await first.until((c) => streamed(c).length >= 3, 10_000, 'three events');
    await first.close();
    const seen = streamed(first).slice(0, 3);
    const last = seen.at(-1)!.cursor;
    // While no one listens on that connection, story 4412 is retracted.
    const ridB = await retract(stories['4412']!.passport.id, 'second passport forged too');
    await reference.until(committed(ridB), 10_000, 'the reference stream to see the second retraction');
    const resumed = sub(last);
    await resumed.until(committed(ridB), 10_000, 'the resumed stream to reach the second retraction');
    const all = [...seen, ...streamed(resumed)];
    expect(all.map((e) => e.cursor)).toEqual(streamed(reference).map((e) => e.cursor));
    expect(all).toEqual(streamed(reference));
    expect(new Set(all.map((e) => e.cursor)).size).toBe(all.length);
    expect([...new Set(all.map((e) => e.retraction.id))]).toEqual([ridA, ridB]);
    await resumed.close();
  });

  it('a subscriber without a cursor starts from now; one with a malformed cursor is refused', async () => {
    const fromNow = sub();
    // Retract until the new subscriber is demonstrably live (it sees a retraction committed after it
    // subscribed); the first try is story 4413, later ones fresh probes.
    const actor = { fleet: 'acme', agentId: agent.id };
    const made: string[] = [];
    for (let attempt = 0; ; attempt++) {
      const target =
        attempt === 0 ? stories['4413']!.passport.id : (await belief(s.core, actor, `from-now/${attempt}`)).id;
      made.push(await retract(target, attempt === 0 ? 'third passport forged' : 'from-now probe'));
      try {
        await fromNow.until(committed(made.at(-1)!), 3_000, 'a retraction made after subscribing');
        break;
      } catch (e) {
        if (attempt > 3) throw e;
      }
    }
    lastRid = made.at(-1)!;
    const ev = streamed(fromNow);
    // Nothing from before it subscribed (stories 4411/4412, the probe): only retractions made since, whole.
    expect(ev[0]!.__typename).toBe('RetractionStarted');
    expect(ev.every((e) => made.includes(e.retraction.id))).toBe(true);
    expect(ev.filter((e) => e.retraction.id === made.at(-1)).length).toBe(made.length === 1 ? 9 : 3);
    await fromNow.close();
    const bad = sub('not-a-cursor');
    await bad.until((c) => c.errors.length > 0 || c.completed, 10_000, 'a refusal');
    expect(bad.errors.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
    expect(bad.errors[0]!.extensions?.field).toBe('after');
    await bad.close();
  });

  it('the same stream over SSE: the same events with the same cursors and payloads', async () => {
    await reference.until(committed(lastRid), 10_000, 'the reference stream to reach the latest retraction');
    const sse = subscribeSse<{ retractionEvents: StreamedEvent }>(
      s.http,
      RETRACTION_EVENTS,
      { after: origin },
      agent.token,
    );
    const want = streamed(reference);
    await sse.until((c) => c.events.length >= want.length, 10_000, 'the SSE stream to catch up');
    expect(sse.events.map((e) => e.retractionEvents)).toEqual(want);
    expect(sse.errors).toEqual([]);
    const res = await sse.response;
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await sse.close();
  });

  it('a subscriber that never reads does not hold up another, and later receives everything', async () => {
    const actor = { fleet: 'acme', agentId: agent.id };
    const big = 'y'.repeat(16_000);
    const root = await belief(s.core, actor, 'slow/root');
    for (let i = 0; i < 60; i++) {
      await assertBelief(s.core, actor, {
        claimKey: `slow/d-${i}`,
        statement: `slow dependent ${i}`,
        value: `${big}${i}`,
        derivedFrom: [root.id],
      });
    }
    // The slow subscriber asks for the 16 KB values many times over (~220 KB an event, ~13 MB in all:
    // more than the sockets buffer, so the server's writes to it back up) and reads nothing.
    const heavy = `subscription($after: String) { retractionEvents(after: $after) { __typename cursor
      ... on BeliefRetracted { belief { ${Array.from({ length: 14 }, (_, i) => `v${i}: value`).join(' ')} } } } }`;
    const slow = subscribeSse<{ retractionEvents: { __typename: string; cursor: string } }>(
      s.http,
      heavy,
      { after: origin },
      agent.token,
      { paused: true },
    );
    await slow.response;
    const fast = sub(origin);
    const started = Date.now();
    latest = () => streamed(fast).at(-1)!.cursor;
    const rid = await retract(root.id, 'slow root was wrong');
    await fast.until(committed(rid), 15_000, 'the fast subscriber to see the whole cascade');
    const took = Date.now() - started;
    expect(streamed(fast).filter((e) => e.retraction.id === rid && e.__typename === 'BeliefRetracted').length).toBe(61);
    expect(slow.events.length).toBe(0);
    expect(took).toBeLessThan(15_000);
    // Once it reads, the slow one gets every event, in the same order as the fast one.
    slow.resume();
    await slow.until(
      (c) =>
        c.events.some(
          (e) =>
            e.retractionEvents.__typename === 'RetractionCommitted' &&
            streamed(fast).at(-1)!.cursor === e.retractionEvents.cursor,
        ),
      30_000,
      'the slow subscriber to catch up',
    );
    expect(slow.events.map((e) => e.retractionEvents.cursor)).toEqual(streamed(fast).map((e) => e.cursor));
    const last = latest();
    latest = () => last;
    await slow.close();
    await fast.close();
  });

  it.runIf(engine !== 'pglite')(
    "two server processes on one database: events committed through the second reach the first's subscribers (LISTEN/NOTIFY)",
    async () => {
      const port = await freePort();
      const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/server/main.ts'], {
        env: {
          ...process.env,
          DATABASE_URL: s.db.url!,
          PORT: String(port),
          HOST: '127.0.0.1',
          RETRACT_BOOTSTRAP_TOKEN: BOOTSTRAP_TOKEN,
          LOG_LEVEL: 'warn',
          NODE_ENV: 'test',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      try {
        const other = `http://127.0.0.1:${port}`;
        for (let i = 0; ; i++) {
          const up = await fetch(`${other}/health`).then(
            (r) => r.ok,
            () => false,
          );
          if (up) break;
          if (i > 300 || child.exitCode !== null) throw new Error(`second server did not come up: ${stderr}`);
          await new Promise((r) => setTimeout(r, 100));
        }
        const health = await (await fetch(`${other}/health`)).json();
        expect(health).toMatchObject({ status: 'ok', engine });
        const watcher = sub(latest());
        const before = notices;
        const rid = await retract(
          stories['4414']!.passport.id,
          'retracted through the second server',
          `${other}/graphql`,
        );
        await watcher.until(
          committed(rid),
          10_000,
          "the first server's subscriber to see the second server's retraction",
        );
        const ev = streamed(watcher);
        expect(ev.map((e) => e.__typename)).toEqual([
          'RetractionStarted',
          'BeliefRetracted',
          'BeliefRetracted',
          'BeliefRetracted',
          'BeliefRetracted',
          'EffectCancelled',
          'ReversalRecorded',
          'ReversalRecorded',
          'RetractionCommitted',
        ]);
        // The first server did not write anything: its tailers were woken by the second server's NOTIFY.
        expect(notices).toBeGreaterThan(before);
        // The other direction too: the second server serves the same stream from the same database.
        const theirs = subscribeWs<{ retractionEvents: StreamedEvent }>(
          `ws://127.0.0.1:${port}/graphql`,
          RETRACTION_EVENTS,
          { after: latest() },
          agent.token,
        );
        await theirs.until(committed(rid), 10_000, "the second server's own subscriber");
        expect(streamed(theirs)).toEqual(ev);
        await theirs.close();
        await watcher.close();
      } finally {
        child.kill('SIGTERM');
        await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
      }
    },
  );

  it('closes the reference subscriber', async () => {
    await reference.close();
    expect(reference.errors).toEqual([]);
  });
});
