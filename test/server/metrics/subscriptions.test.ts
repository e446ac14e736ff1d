import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Waker, retractionEvents } from '../../../src/event/tailer';
import { retractBelief } from '../../../src/retraction/retraction.service';
import { actorIn, engines, expectInvariants } from '../../support/engines';
import { type ApiServer, startApiServer } from '../../support/api-server';
import { samples, scrape } from '../../support/metrics';
import { belief } from '../../support/story';

describe.each(engines())("open subscriptions and the slowest one's lag in GET /metrics on %s", (engine) => {
  let s: ApiServer;
  let waker: Waker;
  beforeAll(async () => {
    s = await startApiServer(engine);
    waker = new Waker(s.store);
    await waker.start();
  });
  afterAll(async () => {
    await waker?.stop();
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  it("a subscriber that has not taken an event counts as behind by that event's age; a caught-up or closed one does not", async () => {
    const actor = await actorIn(s.store, 'metrics-subs');
    const root = await belief(s.core, actor, 'subs/root');
    const stop = new AbortController();
    const events = retractionEvents(s.store, waker, actor.fleet, null, stop.signal);
    // Subscribed (and caught up) before anything happens.
    const first = events.next();
    await new Promise((r) => setTimeout(r, 300));
    let m = samples((await scrape(s.base)).text);
    expect(m.get('retract_subscriptions_open')).toBe(1);
    expect(m.get('retract_subscription_lag_seconds')).toBe(0);

    await retractBelief(s.core, actor, { beliefId: root.id, reason: 'lag' });
    expect((await first).value).toMatchObject({ __typename: 'RetractionStarted' });
    // The consumer takes nothing more for 1.2 s: the next event waits, and its age is the lag.
    await new Promise((r) => setTimeout(r, 1200));
    const next = events.next();
    m = samples((await scrape(s.base)).text);
    expect(m.get('retract_subscriptions_open')).toBe(1);
    await next;
    m = samples((await scrape(s.base)).text);
    expect(m.get('retract_subscription_lag_seconds')).toBeGreaterThanOrEqual(1);

    stop.abort();
    await events.return(undefined);
    m = samples((await scrape(s.base)).text);
    expect(m.get('retract_subscriptions_open')).toBe(0);
    expect(m.get('retract_subscription_lag_seconds')).toBe(0);
  });
});
