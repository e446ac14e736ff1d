import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../src/server/app';
import { startApiServer } from '../support/api-server';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES } from '../../src/agent/scopes';
import { registerEffectKind } from '../../src/effect/effect.service';
import { gid } from '../../src/kernel/ids';
import { coreOf, engines, expectInvariants, type TestDb } from '../support/engines';
import { gql, subscribeWs, type WireError } from '../support/api-client';
import { call, httpClient } from '../mcp/support';
import { belief, executed, proposed } from '../support/story';

/**
 * Sums past 2^53−1: three executed effects of 9007199254740991 USD on one belief. Every surface
 * that shows a total answers it exactly (amountMinorExact, MCP's formatted figure) and says that
 * the SafeInt amountMinor is capped.
 */
const MAX = 9007199254740991;
const SUM = (3n * BigInt(MAX)).toString();
const MONEY = 'amountMinor amountMinorExact amountMinorCapped currency';
const TOTALS = `totals { effectsReached exposure { ${MONEY} } owed { ${MONEY} } unreachableAmount { ${MONEY} } settled { ${MONEY} } }`;
const big = { amountMinor: MAX, amountMinorExact: SUM, amountMinorCapped: true, currency: 'USD' };
const zero = { amountMinor: 0, amountMinorExact: '0', amountMinorCapped: false, currency: 'USD' };
const bigTotals = { effectsReached: 3, exposure: [big], owed: [big], unreachableAmount: [zero], settled: [zero] };

describe.each(engines())('money beyond 2^53−1 on %s', (engine) => {
  let t: TestDb;
  let app: App;
  let url: string;
  let token: string;
  let root: string;
  const errorsOf = (r: { errors?: WireError[] }) => (r.errors ?? []).map((e) => `${e.extensions?.code}: ${e.message}`);

  beforeAll(async () => {
    ({ db: t, app } = await startApiServer(engine, { config: { logLevel: 'fatal' } }));
    url = `${app.url()}/graphql`;
    const a = await createAgentDirect(t.store, { fleet: 'm', name: 'money', scopes: SCOPES });
    token = a.token;
    const core = coreOf(t.store);
    const actor = { fleet: 'm', agentId: a.agent.id };
    await registerEffectKind(core, actor, { kind: 'refund', reversible: true });
    const b = await belief(core, actor, 'big/refunds');
    for (let i = 0; i < 3; i++)
      await executed(core, actor, await proposed(core, actor, 'refund', [b], `big-${i}`, MAX), `bank-${i}`);
    root = gid('Belief', b.id);
  });
  afterAll(async () => {
    await app?.close();
    await t?.close();
  });

  it('previewRetraction, retractBelief and retraction.totals answer the exact sum and flag amountMinor as capped', async () => {
    const preview = await gql(
      url,
      `query($id: ID!) { previewRetraction(beliefId: $id) { ${TOTALS} } }`,
      { id: root },
      token,
    );
    expect(errorsOf(preview)).toEqual([]);
    expect(preview.data.previewRetraction.totals).toEqual(bigTotals);

    const sub = subscribeWs(
      `${app.url().replace('http', 'ws')}/graphql`,
      `subscription { retractionEvents { __typename ... on RetractionCommitted { ${TOTALS} } } }`,
      {},
      token,
    );
    // The subscription starts from now: wait until it is live before retracting.
    await new Promise((r) => setTimeout(r, 500));
    const done = await gql(
      url,
      `mutation($i: RetractBeliefInput!) { retractBelief(input: $i) { id ${TOTALS} } }`,
      { i: { beliefId: root, reason: 'too big' } },
      token,
    );
    expect(errorsOf(done)).toEqual([]);
    expect(done.data.retractBelief.totals).toEqual(bigTotals);

    const read = await gql(
      url,
      `query($id: ID!) { node(id: $id) { ... on Retraction { ${TOTALS} } } }`,
      { id: done.data.retractBelief.id },
      token,
    );
    expect(errorsOf(read)).toEqual([]);
    expect(read.data.node.totals).toEqual(bigTotals);

    await sub.until(
      (c) =>
        c.results.some((r) => (r.data as any)?.retractionEvents?.__typename === 'RetractionCommitted') ||
        c.errors.length > 0,
      10_000,
      'RetractionCommitted',
    );
    expect(sub.errors).toEqual([]);
    const committed = sub.results
      .map((r) => (r.data as any).retractionEvents)
      .find((e) => e.__typename === 'RetractionCommitted');
    expect(committed.totals).toEqual(bigTotals);
    await sub.close();

    // One effect's own amount is within range: exact and not capped.
    const effects = await gql(url, `{ effects(first: 5) { edges { node { amount { ${MONEY} } } } } }`, {}, token);
    expect(effects.data.effects.edges.map((e: any) => e.node.amount)).toEqual(
      Array(3).fill({ amountMinor: MAX, amountMinorExact: String(MAX), amountMinorCapped: false, currency: 'USD' }),
    );
    await expectInvariants(t.store);
  });

  it('MCP get_receipt and list_owed_reversals answer the exact sums and keep listing the fleet', async () => {
    const client = await httpClient(`${app.url()}/mcp`, token);
    try {
      const receipt = await call(client, 'get_receipt');
      const exact = {
        amountMinor: MAX,
        amountMinorExact: SUM,
        amountMinorCapped: true,
        currency: 'USD',
        formatted: '$270,215,977,642,229.73',
      };
      expect(receipt.totals.exposure).toEqual([exact]);
      expect(receipt.totals.owed).toEqual([exact]);
      const owed = await call(client, 'list_owed_reversals');
      expect(owed.totalCount).toBe(3);
      expect(owed.owed).toEqual([exact]);
      expect(owed.items[0].amount).toEqual({
        amountMinor: MAX,
        amountMinorExact: String(MAX),
        amountMinorCapped: false,
        currency: 'USD',
        formatted: '$90,071,992,547,409.91',
      });
    } finally {
      await client.close();
    }
  });
});
