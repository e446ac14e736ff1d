import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gid } from '../../src/kernel/ids';
import { SCOPES } from '../../src/agent/scopes';
import { actorIn, engines, expectInvariants } from '../support/engines';
import { belief, passportStory } from '../support/story';
import { retractBelief } from '../../src/retraction/retraction.service';
import { codes, gql, ok, subscribeWs } from '../support/api-client';
import { type ApiServer, agentWith, startApiServer, type TestAgent } from '../support/api-server';

const EVENTS = /* GraphQL */ `
  subscription ($after: String, $granularity: RetractionEventGranularity) {
    retractionEvents(after: $after, granularity: $granularity) {
      __typename
      retraction {
        id
      }
      ... on ReinstatementStarted {
        reinstatement {
          id
        }
      }
      ... on BeliefReinstated {
        depth
        belief {
          id
          status
        }
        reinstatement {
          id
        }
      }
      ... on BeliefsReinstated {
        depth
        count
        beliefs {
          id
        }
      }
      ... on ReversalVoided {
        reversal {
          id
          status
        }
      }
      ... on ReversalsVoided {
        count
        reversals {
          id
        }
      }
      ... on EffectRestored {
        effect {
          id
          status
        }
      }
      ... on ReinstatementCommitted {
        reinstatement {
          id
        }
        totals {
          beliefsReinstated
          voided {
            amountMinor
            currency
          }
          reexecutionOwed {
            amountMinor
          }
          effectsRestorable
        }
      }
    }
  }
`;

const REINSTATE = /* GraphQL */ `
  mutation ($id: ID!) {
    reinstateRetraction(input: { retractionId: $id, reason: "the lab re-checked: genuine" }) {
      __typename
      ... on RetractionReinstated {
        reinstatement {
          id
          status
          retraction {
            id
            reinstatement {
              id
            }
          }
          beliefs(first: 2) {
            totalCount
            edges {
              node {
                id
              }
            }
            pageInfo {
              hasNextPage
              endCursor
            }
          }
          moneyLines {
            line
            priorStatus
            amount {
              amountMinor
              currency
            }
            reexecutionKey
            effect {
              id
            }
          }
          restorableEffects {
            id
            status
          }
          totals {
            beliefsReinstated
            voided {
              amountMinor
              currency
            }
            reexecutionOwed {
              amountMinor
              currency
            }
            effectsRestorable
          }
        }
      }
      ... on ReinstatementBlocked {
        contradiction {
          id
        }
      }
    }
  }
`;

describe.each(engines())('reinstateRetraction over GraphQL on %s', (engine) => {
  let s: ApiServer;
  let agent: TestAgent;
  beforeAll(async () => {
    s = await startApiServer(engine);
    agent = await agentWith(s.db.store, 'acme', SCOPES, 'reinstater');
  });
  afterAll(async () => s?.close());

  it('answers the receipt, streams the cascade running back in both granularities, and restores the payout', async () => {
    const actor = await actorIn(s.db.store, 'acme');
    const st = await passportStory(s.core, actor, 'customer:5151');
    const perBelief = subscribeWs<{ retractionEvents: any }>(s.ws, EVENTS, {}, agent.token);
    const perLevel = subscribeWs<{ retractionEvents: any }>(s.ws, EVENTS, { granularity: 'LEVEL' }, agent.token);
    // A subscription is live once it has seen a commit: retract probes until both have seen one.
    const committed = (c: typeof perBelief, type: string) =>
      c.events.some((e) => e.retractionEvents.__typename === type);
    for (let i = 0; !committed(perBelief, 'RetractionCommitted') || !committed(perLevel, 'RetractionCommitted'); i++) {
      expect(i).toBeLessThan(100);
      const probe = await belief(s.core, actor, `probe/${i}`);
      await retractBelief(s.core, actor, { beliefId: probe.id, reason: 'probe' });
      await new Promise((res) => setTimeout(res, 100));
    }
    const retracted = ok(
      await gql(
        s.http,
        `mutation($id: ID!) { retractBelief(input: { beliefId: $id, reason: "forged" }) { id } }`,
        { id: gid('Belief', st.passport.id) },
        agent.token,
      ),
    );
    const rid = (retracted as any).retractBelief.id;
    const r = ok(await gql(s.http, REINSTATE, { id: rid }, agent.token)) as any;
    expect(r.reinstateRetraction.__typename).toBe('RetractionReinstated');
    const ri = r.reinstateRetraction.reinstatement;
    expect(ri).toMatchObject({ status: 'REINSTATED', retraction: { id: rid, reinstatement: { id: ri.id } } });
    expect(ri.beliefs.totalCount).toBe(4);
    expect(ri.beliefs.edges.map((e: any) => e.node.id)).toEqual([
      gid('Belief', st.passport.id),
      gid('Belief', st.derived[0]!.id),
    ]);
    const page2 = ok(
      await gql(
        s.http,
        `query($id: ID!, $after: String) { reinstatement(id: $id) { beliefs(first: 5, after: $after) { edges { node { id } } pageInfo { hasNextPage } } } }`,
        { id: ri.id, after: ri.beliefs.pageInfo.endCursor },
        agent.token,
      ),
    ) as any;
    expect(page2.reinstatement.beliefs.edges.map((e: any) => e.node.id)).toEqual([
      gid('Belief', st.derived[2]!.id),
      gid('Belief', st.derived[1]!.id),
    ]);
    expect(ri.moneyLines).toEqual([
      {
        line: 'VOIDED',
        priorStatus: 'OWED',
        amount: { amountMinor: 124000, currency: 'USD' },
        reexecutionKey: null,
        effect: { id: gid('Effect', st.refund.id) },
      },
      {
        line: 'VOIDED',
        priorStatus: 'UNREACHABLE',
        amount: { amountMinor: 8900, currency: 'USD' },
        reexecutionKey: null,
        effect: { id: gid('Effect', st.charge.id) },
      },
    ]);
    expect(ri.totals).toEqual({
      beliefsReinstated: 4,
      voided: [{ amountMinor: 132900, currency: 'USD' }],
      reexecutionOwed: [{ amountMinor: 0, currency: 'USD' }],
      effectsRestorable: 1,
    });
    expect(ri.restorableEffects).toEqual([{ id: gid('Effect', st.pending.id), status: 'CANCELLED' }]);

    const restored = ok(
      await gql(
        s.http,
        `mutation($id: ID!) { restoreEffect(effectId: $id) { id status } }`,
        { id: gid('Effect', st.pending.id) },
        agent.token,
      ),
    ) as any;
    expect(restored.restoreEffect).toEqual({ id: gid('Effect', st.pending.id), status: 'PENDING' });

    await perBelief.until((c) => c.events.some((e) => e.retractionEvents.__typename === 'EffectRestored'), 20_000);
    await perLevel.until((c) => c.events.some((e) => e.retractionEvents.__typename === 'EffectsRestored'), 20_000);
    const after = (c: typeof perBelief) => {
      const evs = c.events.map((e) => e.retractionEvents);
      return evs.slice(evs.findIndex((e) => e.__typename === 'ReinstatementStarted'));
    };
    const b = after(perBelief);
    expect(b.map((e) => e.__typename)).toEqual([
      'ReinstatementStarted',
      'BeliefReinstated',
      'BeliefReinstated',
      'BeliefReinstated',
      'BeliefReinstated',
      'ReversalVoided',
      'ReversalVoided',
      'ReinstatementCommitted',
      'EffectRestored',
    ]);
    expect(b.filter((e) => e.belief).map((e) => [e.belief.id, e.depth])).toEqual([
      [gid('Belief', st.passport.id), 0],
      [gid('Belief', st.derived[0]!.id), 1],
      [gid('Belief', st.derived[2]!.id), 1],
      [gid('Belief', st.derived[1]!.id), 2],
    ]);
    expect(b.every((e) => e.retraction.id === rid)).toBe(true);
    expect(b.at(-2).totals).toEqual({
      beliefsReinstated: 4,
      voided: [{ amountMinor: 132900, currency: 'USD' }],
      reexecutionOwed: [{ amountMinor: 0 }],
      effectsRestorable: 1,
    });
    const l = after(perLevel);
    expect(l.map((e) => e.__typename)).toEqual([
      'ReinstatementStarted',
      'BeliefsReinstated',
      'BeliefsReinstated',
      'BeliefsReinstated',
      'ReversalsVoided',
      'ReinstatementCommitted',
      'EffectsRestored',
    ]);
    expect(l.filter((e) => e.beliefs).map((e) => [e.depth, e.count])).toEqual([
      [0, 1],
      [1, 2],
      [2, 1],
    ]);
    await perBelief.close();
    await perLevel.close();
    await expectInvariants(s.db.store);
  });

  it('needs beliefs:retract to reinstate; the receipt is read with receipts:read, as a Retraction is', async () => {
    const actor = await actorIn(s.db.store, 'acme');
    const st = await passportStory(s.core, actor, 'customer:5252');
    const rid = (
      ok(
        await gql(
          s.http,
          `mutation($id: ID!) { retractBelief(input: { beliefId: $id, reason: "forged" }) { id } }`,
          { id: gid('Belief', st.passport.id) },
          agent.token,
        ),
      ) as any
    ).retractBelief.id;
    const reader = await agentWith(s.db.store, 'acme', ['beliefs:read'], 'reader');
    const refused = await gql(s.http, REINSTATE, { id: rid }, reader.token);
    expect(codes(refused.body.errors)).toEqual(['FORBIDDEN']);
    const retracter = await agentWith(s.db.store, 'acme', ['beliefs:retract'], 'retracter');
    const own = ok(
      await gql(
        s.http,
        `mutation($id: ID!) { reinstateRetraction(input: { retractionId: $id, reason: "genuine" }) { ... on RetractionReinstated { reinstatement { id totals { beliefsReinstated } } } } }`,
        { id: rid },
        retracter.token,
      ),
    ) as any;
    const id = own.reinstateRetraction.reinstatement.id;
    expect(own.reinstateRetraction.reinstatement.totals.beliefsReinstated).toBe(4);
    const later = await gql(s.http, `query($id: ID!) { reinstatement(id: $id) { id } }`, { id }, retracter.token);
    expect(codes(later.body.errors)).toEqual(['FORBIDDEN']);
    const auditor = await agentWith(s.db.store, 'acme', ['receipts:read'], 'auditor');
    const read = ok(
      await gql(
        s.http,
        `query($id: ID!) { reinstatement(id: $id) { status totals { beliefsReinstated } } reinstatements(first: 5) { totalCount } }`,
        { id },
        auditor.token,
      ),
    ) as any;
    expect(read.reinstatement).toEqual({ status: 'REINSTATED', totals: { beliefsReinstated: 4 } });
    expect(read.reinstatements.totalCount).toBeGreaterThanOrEqual(1);
    const other = await agentWith(s.db.store, 'elsewhere', ['receipts:read'], 'stranger');
    const hidden = await gql(s.http, `query($id: ID!) { reinstatement(id: $id) { id } }`, { id }, other.token);
    expect(codes(hidden.body.errors)).toEqual(['NOT_FOUND']);
  });
});
