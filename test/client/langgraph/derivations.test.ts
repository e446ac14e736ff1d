// What RetractStore does that InMemoryStore cannot: items derived from other items are real derivations, so they
// fall with their premise, survive on another support, and carry effects a retraction reaches; plus the fleet, the
// claim keys and the refusals a LangGraph user meets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DERIVED_FROM, RetractStoreError, type RetractStore } from '../../../src/client/langgraph/index.js';
import { graphql } from '../../../src/client';
import { engines, expectInvariants } from '../../support/engines';
import { agentWith } from '../../support/api-server';
import { startStoreServer, type StoreServer } from './support';

describe.each(engines())('RetractStore derivations, fleets and refusals on %s', (engine) => {
  let s: StoreServer;
  beforeAll(async () => {
    s = await startStoreServer(engine);
  });
  afterAll(async () => {
    await s?.close();
  });

  /** A premise p, d derived from p, dd derived from d and from an item of another namespace. */
  async function chain(store: RetractStore) {
    await store.put(['facts'], 'p', { text: 'the passport is authentic' });
    await store.put(['facts'], 'other', { text: 'the address is verified' });
    await store.put(['facts'], 'd', { text: 'KYC passed', [DERIVED_FROM]: ['p'] });
    await store.put(['conclusions'], 'dd', {
      text: 'eligible for an instant refund',
      [DERIVED_FROM]: [
        { namespace: ['facts'], key: 'd' },
        { namespace: ['facts'], key: 'other' },
      ],
    });
  }

  it("an item put with __derivedFrom is a belief justified by its premises' beliefs; the value is stored as given", async () => {
    const store = await s.retractStore();
    await chain(store);
    expect((await store.get(['facts'], 'd'))!.value).toEqual({ text: 'KYC passed', __derivedFrom: ['p'] });
    const p = await store.beliefOf(['facts'], 'p');
    const d = await store.beliefOf(['facts'], 'd');
    const r = await store.client.request(
      graphql(`
        query J($id: ID!) {
          belief(id: $id) {
            grounded
            justifications {
              premises {
                id
              }
            }
          }
        }
      `),
      { id: d!.id },
    );
    expect(r.belief).toEqual({ grounded: false, justifications: [{ premises: [{ id: p!.id }] }] });
    await expectInvariants(s.server.store);
  });

  it('deleting a premise takes every item derived from it, at any depth, out of get, search and listNamespaces', async () => {
    const store = await s.retractStore();
    await chain(store);
    await store.delete(['facts'], 'p');
    expect(await store.get(['facts'], 'p')).toBeNull();
    expect(await store.get(['facts'], 'd')).toBeNull();
    expect(await store.get(['conclusions'], 'dd')).toBeNull();
    expect((await store.search([])).map((i) => i.key)).toEqual(['other']);
    expect(await store.search(['conclusions'], { query: 'refund' })).toEqual([]);
    expect(await store.listNamespaces()).toEqual([['facts']]);
    await expectInvariants(s.server.store);
  });

  it('a put of null on a premise is the same retraction; a justification needs all its premises; an item with another support stands', async () => {
    const store = await s.retractStore();
    await store.put(['f'], 'a', { t: 'a' });
    await store.put(['f'], 'b', { t: 'b' });
    await store.put(['f'], 'c', { t: 'c' });
    await store.put(['f'], 'x', { t: 'x', [DERIVED_FROM]: ['a'] });
    await store.put(['f'], 'y', { t: 'y', [DERIVED_FROM]: ['a', 'b'] });
    await store.put(['f'], 'z', { t: 'z', [DERIVED_FROM]: ['b'] });
    // A second, alternative support for z: through the client, on the beliefs the store names.
    await store.client.request(
      graphql(`
        mutation A($input: AddJustificationInput!) {
          addJustification(input: $input) {
            id
          }
        }
      `),
      {
        input: { beliefId: (await store.beliefOf(['f'], 'z'))!.id, premises: [(await store.beliefOf(['f'], 'c'))!.id] },
      },
    );
    await store.batch([{ namespace: ['f'], key: 'a', value: null }]);
    expect(await store.get(['f'], 'x')).toBeNull();
    expect(await store.get(['f'], 'y')).toBeNull();
    await store.delete(['f'], 'b');
    expect((await store.get(['f'], 'z'))!.value).toEqual({ t: 'z', [DERIVED_FROM]: ['b'] });
    expect((await store.search(['f'])).map((i) => i.key).sort()).toEqual(['c', 'z']);
    await expectInvariants(s.server.store);
  });

  it('a new value for a premise is a new belief: the old one is retracted, and what was derived from it falls', async () => {
    const store = await s.retractStore();
    await chain(store);
    const before = await store.beliefOf(['facts'], 'p');
    await store.put(['facts'], 'p', { text: 'the passport is forged' });
    expect((await store.get(['facts'], 'p'))!.value).toEqual({ text: 'the passport is forged' });
    expect((await store.beliefOf(['facts'], 'p'))!.id).not.toBe(before!.id);
    expect(await store.get(['facts'], 'd')).toBeNull();
    expect(await store.get(['conclusions'], 'dd')).toBeNull();
    const c = await store.client.request(
      graphql(`
        query C {
          contradictions(status: RESOLVED) {
            verdict
            claimKey
          }
        }
      `),
    );
    expect(c.contradictions).toEqual([{ verdict: 'ACCEPT_PROPOSED', claimKey: store.claimKeyOf(['facts'], 'p') }]);
    await expectInvariants(s.server.store);
  });

  it('concurrent puts of different values to one key all succeed; the item ends with one of them, no contradiction left open', async () => {
    const store = await s.retractStore();
    await store.put(['race'], 'k', { v: 0 });
    await Promise.all([1, 2, 3, 4].map((v) => store.put(['race'], 'k', { v })));
    expect([1, 2, 3, 4]).toContain((await store.get(['race'], 'k'))!.value.v);
    expect(await store.search(['race'])).toHaveLength(1);
    const open = await store.client.request(
      graphql(`
        query O {
          contradictions(status: OPEN) {
            id
          }
        }
      `),
    );
    expect(open.contradictions).toEqual([]);
    await expectInvariants(s.server.store);
  });

  it('a put of the same value corroborates: no new belief, the item keeps its createdAt', async () => {
    const store = await s.retractStore();
    await store.put(['n'], 'k', { v: 1 });
    const first = await store.get(['n'], 'k');
    await store.put(['n'], 'k', { v: 1 });
    expect(await store.get(['n'], 'k')).toEqual(first);
  });

  it('an item deleted and derived items fallen: an effect resting on a derived item is cancelled, an executed one reached', async () => {
    const store = await s.retractStore();
    await chain(store);
    const admin = await agentWith(s.server.store, (await store.client.viewer()).fleet, ['admin'], 'ops');
    const { RetractClient } = await import('../../../src/client');
    const ops = new RetractClient({ url: s.server.http, token: admin.token });
    await ops.request(
      graphql(`
        mutation K($input: RegisterEffectKindInput!) {
          registerEffectKind(input: $input) {
            kind
          }
        }
      `),
      { input: { kind: 'refund', reversible: true } },
    );
    const dd = await store.beliefOf(['conclusions'], 'dd');
    const pending = await ops.proposeEffect({
      kind: 'refund',
      idempotencyKey: 'refund-1',
      amount: { amountMinor: 12_000, currency: 'USD' },
      supportedBy: [dd!.id],
    });
    const executed = await ops.proposeEffect({
      kind: 'refund',
      idempotencyKey: 'refund-2',
      amount: { amountMinor: 5_000, currency: 'USD' },
      supportedBy: [dd!.id],
    });
    if (pending.__typename !== 'EffectProposed' || executed.__typename !== 'EffectProposed')
      throw new Error('not proposed');
    const claimed = await ops.claimEffect(['refund']);
    expect(claimed!.id).toBe(pending.effect.id);
    await ops.completeEffect(claimed!.id, 'psp-1');
    await store.delete(['facts'], 'p');
    const after = await ops.request(
      graphql(`
        query E {
          effects {
            edges {
              node {
                idempotencyKey
                status
                reversal {
                  status
                }
              }
            }
          }
        }
      `),
    );
    expect(
      after.effects.edges.map((e) => e.node).sort((a, b) => a.idempotencyKey.localeCompare(b.idempotencyKey)),
    ).toEqual([
      { idempotencyKey: 'refund-1', status: 'EXECUTED', reversal: { status: 'OWED' } },
      { idempotencyKey: 'refund-2', status: 'CANCELLED', reversal: null },
    ]);
    await ops.close();
    await expectInvariants(s.server.store);
  });

  it("items live in the token's fleet: another fleet's store with the same namespace sees none of them", async () => {
    const a = await s.retractStore();
    const b = await s.retractStore();
    await a.put(['shared', 'ns'], 'k', { owner: 'a' });
    expect(await b.get(['shared', 'ns'], 'k')).toBeNull();
    expect(await b.search(['shared'])).toEqual([]);
    expect(await b.listNamespaces()).toEqual([]);
    await b.put(['shared', 'ns'], 'k', { owner: 'b' });
    expect((await a.get(['shared', 'ns'], 'k'))!.value).toEqual({ owner: 'a' });
    await b.delete(['shared', 'ns'], 'k');
    expect((await a.get(['shared', 'ns'], 'k'))!.value).toEqual({ owner: 'a' });
  });

  it('two stores of one fleet with different roots keep apart; beliefs under the root that are not items are ignored', async () => {
    const fleet = `roots-${process.pid}`;
    const a = await s.retractStore({ fleet, root: 'memA' });
    const b = await s.retractStore({ fleet, root: 'memB' });
    await a.put(['n'], 'k', { v: 'a' });
    expect(await b.get(['n'], 'k')).toBeNull();
    expect(a.claimKeyOf(['n'], 'k')).toBe('memA/n/#k');
    await a.client.assertBelief({ claimKey: 'memA/not-an-item', statement: 'written by hand', value: 1 });
    await a.client.assertBelief({
      claimKey: 'memA/n/#b~ZZ',
      statement: 'not an encoding the store writes',
      value: { v: 1 },
    });
    expect((await a.search([])).map((i) => i.key)).toEqual(['k']);
    expect(await a.listNamespaces()).toEqual([['n']]);
  });

  it('refusals name the field and the rule, and write nothing', async () => {
    const store = await s.retractStore();
    await expect(store.put(['n'], 'x', { [DERIVED_FROM]: ['missing'] })).rejects.toThrow(
      new RetractStoreError('value.__derivedFrom[0]', 'no item "missing" in namespace ["n"]'),
    );
    await expect(store.put(['n'], 'x', { [DERIVED_FROM]: 'p' })).rejects.toBeInstanceOf(RetractStoreError);
    await expect(store.put(['n'], 'x', { [DERIVED_FROM]: [{ key: 'p' }] })).rejects.toThrow(/__derivedFrom\[0\]/);
    await expect(store.put(['n'], 'k'.repeat(300), { v: 1 })).rejects.toThrow(/at most 256/);
    // What could never be stored is simply not there.
    expect(await store.get(['n'], 'k'.repeat(300))).toBeNull();
    await expect(store.delete(['n'], 'k'.repeat(300))).resolves.toBeUndefined();
    expect(await store.search(['n'.repeat(300)])).toEqual([]);
    await expect(store.put(['n'], 'big', { v: 'x'.repeat(20_000) })).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      field: 'value',
    });
    expect(await store.search([])).toEqual([]);
  });

  it('a token without the scopes the store needs is refused FORBIDDEN', async () => {
    const reader = await agentWith(s.server.store, `ro-${process.pid}`, ['beliefs:read'], 'reader');
    const { RetractStore } = await import('../../../src/client/langgraph/index.js');
    const store = new RetractStore({ url: s.server.http, token: reader.token });
    await expect(store.put(['n'], 'k', { v: 1 })).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(await store.get(['n'], 'k')).toBeNull();
    await store.stop();
  });
});
