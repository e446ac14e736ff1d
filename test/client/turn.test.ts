import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createApp, type App } from '../../src/server/app';
import { graphql, RetractClient, RetractApiError, TurnGaveUp } from '../../src/client';
import { HeuristicAdjudicator } from '../../src/adjudication/heuristic';
import { embedder, engines, expectInvariants, type TestDb } from '../support/engines';
import { storeSuite } from '../support/helpers';
import { createAgentDirect } from '../../src/agent/agent.service';
import { SCOPES } from '../../src/agent/scopes';

describe.each(engines())('READ, THINK, COMMIT through the typed client on %s', (engine) => {
  let t: TestDb;
  let app: App;
  let alice: RetractClient;
  let bob: RetractClient;
  storeSuite(engine, {}, async (s) => {
    t = s.t;
    app = await createApp({
      store: t.store,
      embedder,
      adjudicator: new HeuristicAdjudicator(),
      config: { port: 0, host: '127.0.0.1', logLevel: 'error' },
    });
    await app.listen();
    const url = `${app.url()}/graphql`;
    const a = await createAgentDirect(t.store, { fleet: 'turns', name: 'alice', scopes: SCOPES });
    const b = await createAgentDirect(t.store, { fleet: 'turns', name: 'bob', scopes: SCOPES });
    alice = new RetractClient({ url, token: a.token, webSocketImpl: WebSocket });
    bob = new RetractClient({ url, token: b.token, webSocketImpl: WebSocket });
  });
  afterAll(async () => {
    await alice?.close();
    await bob?.close();
    await app?.close();
  });

  it('search refuses an empty text and a k above the maximum, naming the field', async () => {
    await expect(alice.search({ text: '   ' })).rejects.toMatchObject({ code: 'BAD_USER_INPUT', field: 'input.text' });
    await expect(alice.search({ text: 'x', k: 101 })).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      field: 'input.k',
    });
    await expect(alice.search({ text: 'x', k: 0 })).rejects.toBeInstanceOf(RetractApiError);
  });

  it('search with a claimKeyPrefix still returns k hits when nearer beliefs sit outside the prefix, and hides retracted ones unless asked', async () => {
    for (let i = 0; i < 30; i++) {
      await alice.assertBelief({
        claimKey: `near:${i}/passport.authentic`,
        statement: `The passport of customer ${i} is authentic and verified`,
        value: true,
      });
      await alice.assertBelief({
        claimKey: `far:${i}/shipping.address`,
        statement: `Shipping address number ${i} for an order of garden tools`,
        value: i,
      });
    }
    const r = await alice.search({
      text: 'The passport of customer 7 is authentic and verified',
      k: 10,
      claimKeyPrefix: 'far:',
    });
    expect(r.hits).toHaveLength(10);
    expect(r.hits.every((h) => h.belief.claimKey.startsWith('far:'))).toBe(true);
    expect(r.snapshot).toMatch(/^[A-Za-z0-9_-]+$/);
    const top = await alice.search({ text: 'The passport of customer 7 is authentic and verified', k: 3 });
    expect(top.hits[0]!.belief.claimKey).toBe('near:7/passport.authentic');
    expect(top.hits[0]!.score).toBeGreaterThan(0.99);
    await alice.retractBelief(top.hits[0]!.belief.id, 'test');
    const after = await alice.search({ text: 'The passport of customer 7 is authentic and verified', k: 3 });
    expect(after.hits.map((h) => h.belief.claimKey)).not.toContain('near:7/passport.authentic');
    const withRetracted = await alice.search({
      text: 'The passport of customer 7 is authentic and verified',
      k: 3,
      includeRetracted: true,
    });
    expect(withRetracted.hits[0]!.belief).toMatchObject({ claimKey: 'near:7/passport.authentic', status: 'RETRACTED' });
    await expectInvariants(t.store);
  });

  it('turn() re-runs READ and THINK when a premise is retracted between READ and COMMIT', async () => {
    const p1 = await bob.assertBelief({
      claimKey: 'cust:1/kyc.passed',
      statement: 'customer 1 passed KYC',
      value: true,
    });
    if (p1.__typename !== 'BeliefAsserted') throw new Error(p1.__typename);
    const thoughts: number[] = [];
    const { result, attempts } = await alice.turn({
      read: { text: 'customer 1 passed KYC', k: 5, claimKeyPrefix: 'cust:1/' },
      think: async (read, attempt) => {
        thoughts.push(read.hits.length);
        const premise = read.hits.find((h) => h.belief.claimKey === 'cust:1/kyc.passed')!.belief;
        if (attempt === 1) {
          // Another agent learns the KYC was wrong and re-asserts it on new evidence while we think.
          await bob.retractBelief(premise.id, 'KYC vendor error');
          await bob.assertBelief({
            claimKey: 'cust:1/kyc.passed',
            statement: 'customer 1 passed KYC (re-run)',
            value: true,
            evidence: 'second vendor',
          });
        }
        return {
          claimKey: 'cust:1/limit.raised',
          statement: 'customer 1 may get a higher limit',
          value: 5000,
          derivedFrom: [premise.id],
        };
      },
    });
    expect(attempts).toBe(2);
    expect(thoughts).toEqual([1, 1]);
    expect(result?.__typename).toBe('BeliefAsserted');
    await expectInvariants(t.store);
  });

  it('turn() re-runs when the claim was written after the READ, and gives up with reasons after maxAttempts', async () => {
    let n = 0;
    const { result, attempts } = await alice.turn({
      read: { text: 'order 9 shipped' },
      think: async (_read, attempt) => {
        if (attempt === 1)
          await bob.assertBelief({ claimKey: 'order:9/shipped', statement: 'order 9 shipped', value: true });
        return { claimKey: 'order:9/shipped', statement: 'order 9 shipped', value: true };
      },
    });
    expect(attempts).toBe(2);
    expect(result?.__typename).toBe('BeliefCorroborated');

    const gaveUp = alice.turn({
      read: { text: 'order 10 shipped' },
      maxAttempts: 2,
      think: async () => {
        n++;
        await bob.assertBelief({ claimKey: `order:10/shipped.v${n}`, statement: 'order 10 shipped', value: n });
        return { claimKey: `order:10/shipped.v${n}`, statement: 'order 10 shipped', value: -1 };
      },
    });
    await expect(gaveUp).rejects.toBeInstanceOf(TurnGaveUp);
    await expect(gaveUp).rejects.toMatchObject({
      reasons: [expect.stringContaining('written after the READ'), expect.stringContaining('written after the READ')],
    });
    await expectInvariants(t.store);
  });

  it('asks back only what the token may read: a writer holding beliefs:write alone gets its answer, not FORBIDDEN', async () => {
    const client = async (name: string, scopes: string[]) =>
      new RetractClient({
        url: `${app.url()}/graphql`,
        token: (await createAgentDirect(t.store, { fleet: 'turns', name, scopes })).token,
      });
    const writer = await client('writer', ['beliefs:write']);
    const proposer = await client('proposer', ['effects:propose']);
    const auditor = await client('auditor', ['effects:propose', 'receipts:read']);
    await alice.assertBelief({ claimKey: 'w:1/passport.authentic', statement: 'passport 1 is authentic', value: true });

    const raised = await writer.assertBelief({
      claimKey: 'w:1/passport.authentic',
      statement: 'passport 1 is forged',
      value: false,
    });
    if (raised.__typename !== 'ContradictionRaised') throw new Error(raised.__typename);
    expect(raised.contradiction).toEqual({ id: expect.any(String), status: 'OPEN' });
    // A reader's answer to the same kind of write still names the belief it contradicts.
    const seen = await alice.assertBelief({
      claimKey: 'w:1/passport.authentic',
      statement: 'passport 1 is a copy',
      value: 'copy',
    });
    if (seen.__typename !== 'ContradictionRaised') throw new Error(seen.__typename);
    expect(seen.contradiction.existing).toMatchObject({
      claimKey: 'w:1/passport.authentic',
      value: true,
      status: 'ACTIVE',
    });

    const own = await writer.assertBelief({
      claimKey: 'w:2/address',
      statement: 'address 2 is on file',
      value: 'on file',
    });
    if (own.__typename !== 'BeliefAsserted') throw new Error(own.__typename);
    await alice.retractBelief(own.belief.id, 'wrong address');
    const fell = await writer.assertBelief({
      claimKey: 'w:2/shipping',
      statement: 'ship to address 2',
      value: true,
      derivedFrom: [own.belief.id],
    });
    expect(fell).toEqual({ __typename: 'PremiseRetracted' });

    await alice.request(
      graphql(`
        mutation Kind($input: RegisterEffectKindInput!) {
          registerEffectKind(input: $input) {
            kind
          }
        }
      `),
      { input: { kind: 'refund', reversible: true } },
    );
    const effect = { kind: 'refund', supportedBy: [own.belief.id], idempotencyKey: 'w:2/refund' };
    expect(await proposer.proposeEffect(effect)).toEqual({ __typename: 'PremiseRetracted' });
    // receipts:read reads a RETRACTED belief, so the fallen premise comes back named.
    expect(await auditor.proposeEffect(effect)).toMatchObject({
      __typename: 'PremiseRetracted',
      premise: { id: own.belief.id, status: 'RETRACTED' },
    });
    await expectInvariants(t.store);
  });

  it("asks for the token's scopes once for concurrent first writes, and again after that question failed", async () => {
    const sent: string[] = [];
    let viewerDown = true;
    const counting: typeof fetch = async (input, init) => {
      const op = (JSON.parse(String(init?.body)) as { operationName: string }).operationName;
      sent.push(op);
      if (op === 'Viewer' && viewerDown) {
        viewerDown = false;
        return new Response('unavailable', { status: 503 });
      }
      return fetch(input, init);
    };
    const c = new RetractClient({ url: `${app.url()}/graphql`, token: alice.token, fetch: counting });
    await expect(c.assertBelief({ claimKey: 'once:1/x', statement: 'x 1', value: 1 })).rejects.toBeInstanceOf(
      RetractApiError,
    );
    expect(sent).toEqual(['Viewer']); // nothing was asserted on a failed question
    const both = await Promise.all(
      [1, 2].map((i) => c.assertBelief({ claimKey: `once:${i}/x`, statement: `x ${i}`, value: i })),
    );
    expect(both.map((r) => r.__typename)).toEqual(['BeliefAsserted', 'BeliefAsserted']);
    expect(sent).toEqual(['Viewer', 'Viewer', 'AssertBelief', 'AssertBelief']);
    await expectInvariants(t.store);
  });

  it('a snapshot from another fleet or a forged one is refused naming basedOn', async () => {
    await expect(
      alice.assertBelief({ claimKey: 'x:1/y', statement: 's', basedOn: 'not-a-snapshot' }),
    ).rejects.toMatchObject({ code: 'BAD_USER_INPUT', field: 'basedOn' });
    const other = await createAgentDirect(t.store, { fleet: 'elsewhere', name: 'eve', scopes: SCOPES });
    const eve = new RetractClient({ url: `${app.url()}/graphql`, token: other.token });
    const snap = (await eve.search({ text: 'anything' })).snapshot;
    await expect(alice.assertBelief({ claimKey: 'x:1/y', statement: 's', basedOn: snap })).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      field: 'basedOn',
    });
  });
});
