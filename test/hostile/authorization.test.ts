import fs from 'node:fs';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scope } from '../../src/agent/scopes';
import { READ_SCOPES } from '../../src/agent/access';
import { schema } from '../../src/api/schema';
import type { GraphQLInterfaceType, GraphQLObjectType } from 'graphql';
import { actorIn, engines, expectInvariants } from '../support/engines';
import { type Fixture, fleetFixture } from '../support/api-fixture';
import { codes, gql, subscribeWs, type WireError } from '../support/api-client';
import { type ApiServer, agentWith, startApiServer } from '../support/api-server';
import { call, callError, httpClient } from '../mcp/support';
import { gid } from '../../src/kernel/ids';
import { registerEffectKind } from '../../src/effect/effect.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { belief } from '../support/story';

/**
 * Issue 15, item 1: a scope guards a kind of data, not an entry point. Each test reaches a receipt,
 * an effect, an ACTIVE belief or another agent's scopes through a path other than the root field that
 * guards it (node, nested fields, previews, subscriptions, MCP) with a token that lacks the scope,
 * and must be refused FORBIDDEN there; what the token may read next to it still answers.
 */

/** Every FORBIDDEN error's path, as a dotted string; fails on any other error, or one that does not name the scopes it needs. */
function forbiddenAt(errors: readonly WireError[] | undefined): string[] {
  for (const e of errors ?? []) {
    expect({ code: e.extensions?.code, message: e.message }).toMatchObject({
      code: 'FORBIDDEN',
      message: expect.stringMatching(/needs the scope/),
    });
    // The scopes that would open it, in extensions as in the message.
    const required = e.extensions?.requiredScopes as string[] | undefined;
    expect(required?.length, e.message).toBeGreaterThan(0);
    for (const sc of required!) expect(e.message).toContain(sc);
  }
  return (errors ?? []).map((e) => (e.path ?? []).join('.'));
}

it('docs/api.md says which types each scope opens, as src/agent/access.ts enforces it', () => {
  const text = fs.readFileSync('docs/api.md', 'utf8');
  const start = text.indexOf('| type | readable with |');
  expect(start).toBeGreaterThan(0);
  const rows = new Map<string, string[]>();
  for (const row of text.slice(start).split('\n').slice(2)) {
    if (!row.startsWith('|')) break;
    const [, types, scopes] = row.split('|').map((c) => c.trim());
    const named = [...scopes!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).sort();
    for (const t of [...types!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)) rows.set(t, named);
  }
  const union = (...xs: ReadonlyArray<readonly string[]>) => [...new Set(xs.flat())].sort();
  expect(Object.fromEntries(rows)).toEqual({
    Belief: union(READ_SCOPES.Belief, READ_SCOPES.RetractedBelief),
    Effect: union(READ_SCOPES.Effect),
    Retraction: union(READ_SCOPES.Receipt),
    Reversal: union(READ_SCOPES.Receipt),
    RetractionTotals: union(READ_SCOPES.Receipt),
    RetractionEvent: union(READ_SCOPES.Receipt),
    Reinstatement: union(READ_SCOPES.Receipt),
    ReinstatementTotals: union(READ_SCOPES.Receipt),
    ReinstatementMoneyLine: union(READ_SCOPES.Receipt),
    Contradiction: union(READ_SCOPES.Contradiction),
    ProposedBelief: union(READ_SCOPES.Contradiction),
    'Agent.scopes': union(READ_SCOPES.AgentScopes),
  });
});

it("every object type that holds fleet data carries a type-level read rule (its own or its interface's)", () => {
  // Carriers hold no fleet data of their own: what they hold is reached through fields whose types have rules.
  // Agent exposes name and fleet (shown as authors on everything readable); its scopes have a field rule.
  const carriers = new Set([
    'Query',
    'Mutation',
    'Subscription',
    'PageInfo',
    'Money',
    'Agent',
    'AgentCreated',
    'EffectKind',
    'RetractionPreview',
    'Justification',
    'SearchHit',
    'SearchResult',
    'BeliefAsserted',
    'BeliefCorroborated',
    'ContradictionRaised',
    'PremiseRetracted',
    'ClaimChangedSinceRead',
    'EffectProposed',
    'RetractionReinstated',
    'ReinstatementBlocked',
  ]);
  // By tag, not isObjectType: a worktree can load graphql twice (symlinked node_modules), and instanceof then fails.
  const isObject = (t: unknown) => Object.prototype.toString.call(t) === '[object GraphQLObjectType]';
  const ruled = (t: GraphQLObjectType | GraphQLInterfaceType) =>
    !!(t.extensions as { pothosOptions?: { authScopes?: unknown } }).pothosOptions?.authScopes;
  const unruled = Object.values(schema.getTypeMap())
    .filter(
      (t): t is GraphQLObjectType =>
        isObject(t) && !t.name.startsWith('__') && !carriers.has(t.name) && !/(Connection|Edge)$/.test(t.name),
    )
    .filter((t) => !ruled(t) && !t.getInterfaces().some(ruled))
    .map((t) => t.name);
  expect(unruled).toEqual([]);
});

describe.each(engines())('authorization by type on %s', (engine) => {
  let s: ApiServer;
  let fx: Fixture;
  let owner: string;
  const tokens = new Map<string, string>();
  async function tokenWith(...scopes: Scope[]): Promise<string> {
    const key = [...scopes].sort().join(',');
    if (!tokens.has(key)) tokens.set(key, (await agentWith(s.db.store, 'acme', scopes, 'authz')).token);
    return tokens.get(key)!;
  }
  const ask = async (token: string, query: string, variables: Record<string, unknown> = {}) =>
    gql(s.http, query, variables, token);

  beforeAll(async () => {
    s = await startApiServer(engine);
    const actor = await actorIn(s.db.store, 'acme', 'owner');
    owner = actor.token;
    fx = await fleetFixture(s.core, actor, 'authz');
  });
  afterAll(async () => {
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  it('beliefs:read alone: Belief.retraction is FORBIDDEN, the belief itself still answers', async () => {
    const token = await tokenWith('beliefs:read');
    const r = await ask(
      token,
      'query($id: ID!) { belief(id: $id) { claimKey status retraction { reason totals { owed { amountMinor } } } } }',
      { id: fx.r },
    );
    expect(forbiddenAt(r.errors)).toEqual(['belief.retraction']);
    expect(r.data.belief).toEqual({ claimKey: `${fx.tag}/r`, status: 'RETRACTED', retraction: null });
  });

  it('beliefs:read alone: node(id:) on a Retraction, Reversal or Effect id is FORBIDDEN; on a Belief id it answers', async () => {
    const token = await tokenWith('beliefs:read');
    const q = `query($id: ID!) { node(id: $id) { id ... on Retraction { reason } ... on Reversal { idempotencyKey amount { amountMinor } }
      ... on Effect { status amount { amountMinor } } ... on Belief { claimKey } } }`;
    for (const id of [fx.retraction, fx.reversal, fx.pending, fx.refunded]) {
      const r = await ask(token, q, { id });
      expect({ id, at: forbiddenAt(r.errors), data: r.data }).toEqual({ id, at: ['node'], data: { node: null } });
    }
    const ok = await ask(token, q, { id: fx.p });
    expect(ok.errors).toBeUndefined();
    expect(ok.data.node).toEqual({ id: fx.p, claimKey: `${fx.tag}/p` });
  });

  it('beliefs:read alone: Belief.effects and nested effects in a connection are FORBIDDEN', async () => {
    const token = await tokenWith('beliefs:read');
    const direct = await ask(
      token,
      'query($id: ID!) { belief(id: $id) { claimKey effects { status amount { amountMinor } } } }',
      { id: fx.d },
    );
    expect(forbiddenAt(direct.errors)).toEqual([expect.stringMatching(/^belief\.effects\.0$/)]);
    expect(direct.data.belief).toBeNull();
    // Through a connection: every edge that shows an effect is refused; the connection's count still answers.
    const nested = await ask(
      token,
      '{ beliefs(first: 50) { totalCount edges { node { effects { idempotencyKey } } } } }',
    );
    expect(forbiddenAt(nested.errors).length).toBeGreaterThan(0);
    expect(nested.data).toBeNull();
  });

  it('beliefs:read alone: previewRetraction answers its beliefs, but pendingEffects, executedEffects and totals are FORBIDDEN', async () => {
    const token = await tokenWith('beliefs:read');
    const ok = await ask(
      token,
      'query($id: ID!) { previewRetraction(beliefId: $id) { root { id } beliefs { totalCount } survivors { id } } }',
      { id: fx.d },
    );
    expect(ok.errors).toBeUndefined();
    expect(ok.data.previewRetraction.root.id).toBe(fx.d);
    for (const field of [
      'pendingEffects { status amount { amountMinor } }',
      'executingEffects { id }',
      'totals { exposure { amountMinor } }',
    ]) {
      const r = await ask(token, `query($id: ID!) { previewRetraction(beliefId: $id) { root { id } ${field} } }`, {
        id: field.startsWith('executing') ? fx.e : fx.d,
      });
      expect({ field, at: forbiddenAt(r.errors)[0] }).toEqual({
        field,
        at: expect.stringMatching(/^previewRetraction\.(pendingEffects|executingEffects|totals)/),
      });
      expect(r.data).toBeNull();
    }
    // With receipts:read as well, the same preview answers in full.
    const full = await ask(
      await tokenWith('beliefs:read', 'receipts:read'),
      'query($id: ID!) { previewRetraction(beliefId: $id) { pendingEffects { id } totals { beliefsRetracted } } }',
      { id: fx.d },
    );
    expect(full.errors).toBeUndefined();
    expect(full.data.previewRetraction.pendingEffects.map((e: { id: string }) => e.id)).toEqual([fx.pending]);
  });

  it('effects:propose alone: Effect.reversal, Effect.cancelledBy and Effect.supportedBy are FORBIDDEN, the effect itself answers', async () => {
    const token = await tokenWith('effects:propose');
    // node(id:) needs beliefs:read, so the effects connection is this token's way in. The OWED and the UNREACHABLE reversal:
    const listed = await ask(
      token,
      '{ effects(first: 50, status: EXECUTED) { edges { node { idempotencyKey reversal { status retraction { reason } } } } } }',
    );
    expect(forbiddenAt(listed.errors).map((p) => p.replace(/\d+/, 'N'))).toEqual([
      'effects.edges.N.node.reversal',
      'effects.edges.N.node.reversal',
    ]);
    expect(listed.data.effects.edges.map((x: { node: unknown }) => x.node)).toEqual([
      { idempotencyKey: `${fx.tag}:charge`, reversal: null },
      { idempotencyKey: `${fx.tag}:owed`, reversal: null },
    ]);
    // A PENDING effect cancelled by a retraction: the cancelling retraction's reason is a receipt.
    const b = await ask(
      owner,
      'mutation { assertBelief(input: { claimKey: "authz/cancel", statement: "to cancel", value: 1 }) { ... on BeliefAsserted { belief { id } } } }',
    );
    const beliefId = b.data.assertBelief.belief.id;
    const e = await ask(
      owner,
      'mutation($s: [ID!]!) { proposeEffect(input: { kind: "refund", amount: { amountMinor: 10, currency: "USD" }, supportedBy: $s, idempotencyKey: "authz:cancel" }) { ... on EffectProposed { effect { id } } } }',
      { s: [beliefId] },
    );
    expect(
      (
        await ask(
          owner,
          'mutation($b: ID!) { retractBelief(input: { beliefId: $b, reason: "secret reason" }) { id } }',
          { b: beliefId },
        )
      ).errors,
    ).toBeUndefined();
    // Newest first: this one, then the fixture's own cancelled effect; neither cancelling retraction is readable.
    const cancelled = await ask(
      token,
      '{ effects(first: 50, status: CANCELLED) { edges { node { id cancelledBy { reason } } } } }',
    );
    expect(forbiddenAt(cancelled.errors)).toEqual([
      'effects.edges.0.node.cancelledBy',
      'effects.edges.1.node.cancelledBy',
    ]);
    expect(cancelled.data.effects.edges[0]).toEqual({
      node: { id: e.data.proposeEffect.effect.id, cancelledBy: null },
    });
    await expectInvariants(s.db.store);
    const support = await ask(
      token,
      '{ effects(first: 50, status: PENDING) { edges { node { supportedBy { statement } } } } }',
    );
    expect(forbiddenAt(support.errors)).toEqual(['effects.edges.0.node.supportedBy.0']);
  });

  it('receipts:read alone: RETRACTED beliefs on a receipt answer, ACTIVE beliefs reached from it are FORBIDDEN', async () => {
    const token = await tokenWith('receipts:read');
    const receipt = await ask(
      token,
      'query($id: ID!) { retraction(id: $id) { reason root { claimKey status } beliefs { edges { node { status } } } reversals { effect { kind } } } }',
      { id: fx.retraction },
    );
    expect(receipt.errors).toBeUndefined();
    expect(receipt.data.retraction.root).toEqual({ claimKey: `${fx.tag}/r`, status: 'RETRACTED' });
    // The executing refund rests on e, which is ACTIVE.
    const active = await ask(
      token,
      '{ effects(first: 50, status: EXECUTING) { edges { node { idempotencyKey supportedBy { claimKey } } } } }',
    );
    expect(forbiddenAt(active.errors)).toEqual(['effects.edges.0.node.supportedBy.0']);
  });

  it("author { scopes }: another agent's scopes are FORBIDDEN to beliefs:read, visible to admin and to the agent itself", async () => {
    const reader = await agentWith(s.db.store, 'acme', ['beliefs:read'], 'authz-self');
    const r = await ask(reader.token, 'query($id: ID!) { belief(id: $id) { claimKey author { name scopes } } }', {
      id: fx.p,
    });
    expect(forbiddenAt(r.errors)).toEqual(['belief.author.scopes']);
    expect(r.data.belief).toBeNull();
    const name = await ask(reader.token, 'query($id: ID!) { belief(id: $id) { author { name } } }', { id: fx.p });
    expect(name.errors).toBeUndefined();
    const own = await ask(reader.token, '{ viewer { scopes } }');
    expect(own.data).toEqual({ viewer: { scopes: ['beliefs:read'] } });
    const admin = await ask(await tokenWith('admin'), 'query($id: ID!) { belief(id: $id) { author { scopes } } }', {
      id: fx.p,
    });
    expect(admin.errors).toBeUndefined();
    expect(admin.data.belief.author.scopes.length).toBeGreaterThan(0);
  });

  it("subscription: a receipts:read subscriber reads the cascade, but not the actor's scopes", async () => {
    const token = await tokenWith('receipts:read');
    const nosy = subscribeWs(
      s.ws,
      'subscription { retractionEvents { __typename retraction { reason actor { name scopes } } } }',
      {},
      token,
    );
    const plain = subscribeWs(
      s.ws,
      `subscription { retractionEvents { __typename retraction { reason root { claimKey } }
      ... on BeliefRetracted { belief { status } } ... on EffectCancelled { effect { status amount { amountMinor } } } } }`,
      {},
      token,
    );
    try {
      await new Promise((r) => setTimeout(r, 500));
      const retractor = await tokenWith('beliefs:read', 'beliefs:retract');
      const done = await ask(
        retractor,
        'mutation($b: ID!) { retractBelief(input: { beliefId: $b, reason: "authz subscription" }) { id } }',
        { b: fx.d },
      );
      expect(done.errors).toBeUndefined();
      const committed = (c: typeof plain) =>
        c.events.some((e) => e.retractionEvents?.__typename === 'RetractionCommitted');
      await plain.until(committed, 10_000, 'RetractionCommitted');
      expect(plain.errors).toEqual([]);
      const kinds = plain.events.map((e) => e.retractionEvents.__typename);
      expect(kinds).toEqual(
        expect.arrayContaining(['RetractionStarted', 'BeliefRetracted', 'EffectCancelled', 'RetractionCommitted']),
      );
      await nosy.until((c) => c.results.length >= kinds.length, 10_000, 'as many events');
      const refused = nosy.results.flatMap((x) => x.errors ?? []);
      expect(refused).toHaveLength(kinds.length);
      expect(new Set(forbiddenAt(refused))).toEqual(new Set(['retractionEvents.retraction.actor.scopes']));
      await expectInvariants(s.db.store);
    } finally {
      await nosy.close();
      await plain.close();
    }
  });

  it("a mutation's own answer is readable to its caller; what it links to follows the type rules", async () => {
    // beliefs:retract without receipts:read: its receipt and totals answer, the reversals on it do not.
    const retractor = await tokenWith('beliefs:retract');
    const b = await ask(
      await tokenWith('beliefs:write'),
      'mutation { assertBelief(input: { claimKey: "authz/grant", statement: "to retract", value: 1 }) { __typename ... on BeliefAsserted { belief { id claimKey } } } }',
    );
    expect(b.errors).toBeUndefined();
    expect(b.data.assertBelief.belief.claimKey).toBe('authz/grant');
    const r = await ask(
      retractor,
      'mutation($b: ID!) { retractBelief(input: { beliefId: $b, reason: "grant" }) { id reason totals { beliefsRetracted } } }',
      { b: b.data.assertBelief.belief.id },
    );
    expect(r.errors).toBeUndefined();
    expect(r.data.retractBelief).toMatchObject({ reason: 'grant', totals: { beliefsRetracted: 1 } });
    // Only for that request: the same receipt by node is refused afterwards, and so is its root.
    const later = await ask(
      await tokenWith('beliefs:read', 'beliefs:retract'),
      'query($id: ID!) { node(id: $id) { id } }',
      { id: r.data.retractBelief.id },
    );
    expect(codes(later.errors)).toEqual(['FORBIDDEN']);
    const root = await ask(
      retractor,
      'mutation($b: ID!) { retractBelief(input: { beliefId: $b, reason: "again" }) { id root { statement } } }',
      { b: b.data.assertBelief.belief.id },
    );
    expect(forbiddenAt(root.errors)).toEqual(['retractBelief.root']);

    // confirmReversal: the reversal it confirmed answers to effects:execute; the retraction behind it does not.
    const executor = await tokenWith('beliefs:read', 'effects:execute');
    const c = await ask(
      executor,
      'mutation($r: ID!) { confirmReversal(input: { reversalId: $r, providerRef: "prv_authz_1" }) { status effect { status } retraction { reason } } }',
      { r: fx.reversal },
    );
    expect(forbiddenAt(c.errors)).toEqual(['confirmReversal.retraction']);
    const seen = await ask(executor, 'query($id: ID!) { node(id: $id) { id } }', { id: fx.reversal });
    expect(codes(seen.errors)).toEqual(['FORBIDDEN']);
    await expectInvariants(s.db.store);
  });

  it('completeEffect answers the reversal its completion recorded to an executor without receipts:read, and nothing past it', async () => {
    // A retraction reaches the effect while it is EXECUTING; the completion records the reversal in its transaction.
    const owner = await actorIn(s.db.store, 'acme', 'owner');
    await registerEffectKind(s.core, owner, { kind: 'authz_refund', reversible: true }).catch(() => undefined);
    const premise = await belief(s.core, owner, 'authz/executing');
    const executor = await tokenWith('beliefs:read', 'effects:propose', 'effects:execute');
    const proposedEffect = await ask(
      executor,
      'mutation($b: ID!) { proposeEffect(input: { kind: "authz_refund", supportedBy: [$b], idempotencyKey: "authz:executing-1", amount: { amountMinor: 500, currency: "USD" } }) { __typename ... on EffectProposed { effect { id } } } }',
      { b: gid('Belief', premise.id) },
    );
    const effectId = proposedEffect.data.proposeEffect.effect.id as string;
    const claimed = await ask(executor, 'mutation { claimEffect(input: { kinds: ["authz_refund"] }) { id status } }');
    expect(claimed.data.claimEffect).toEqual({ id: effectId, status: 'EXECUTING' });
    await retractBelief(s.core, owner, { beliefId: premise.id, reason: 'reached while executing' });
    const done =
      'mutation($e: ID!) { completeEffect(input: { effectId: $e, externalRef: "bank-authz-1" }) { id status reversal { id status idempotencyKey } } }';
    const first = await ask(executor, done, { e: effectId });
    expect(first.errors).toBeUndefined();
    expect(first.data.completeEffect).toMatchObject({ id: effectId, status: 'EXECUTED', reversal: { status: 'OWED' } });
    // The same completion repeated (a client retrying after a lost answer) answers the same.
    const again = await ask(executor, done, { e: effectId });
    expect(again.errors).toBeUndefined();
    expect(again.data.completeEffect).toEqual(first.data.completeEffect);
    // Nothing more: the retraction behind the reversal is a receipt the call did not write.
    const past = await ask(
      executor,
      'mutation($e: ID!) { completeEffect(input: { effectId: $e, externalRef: "bank-authz-1" }) { reversal { retraction { reason } } } }',
      { e: effectId },
    );
    expect(forbiddenAt(past.errors)).toEqual(['completeEffect.reversal.retraction']);
    await expectInvariants(s.db.store);
  });

  it('contradictions:adjudicate alone lists contradictions to decide; the ACTIVE belief each contradicts is FORBIDDEN', async () => {
    const token = await tokenWith('contradictions:adjudicate');
    const r = await ask(token, '{ contradictions(status: OPEN) { id claimKey proposed { statement } } }');
    expect(r.errors).toBeUndefined();
    expect(r.data.contradictions.map((c: { id: string }) => c.id)).toEqual(expect.arrayContaining([fx.c1, fx.c2]));
    const existing = await ask(token, '{ contradictions(status: OPEN) { id existing { statement } } }');
    expect(forbiddenAt(existing.errors).length).toBeGreaterThan(0);
    expect(new Set(forbiddenAt(existing.errors).map((p) => p.replace(/\d+/, 'N')))).toEqual(
      new Set(['contradictions.N.existing']),
    );
  });

  it('tokens with neither beliefs:read nor contradictions:adjudicate are refused contradictions, except the one their own assertion raised', async () => {
    for (const scopes of [['effects:propose'], ['receipts:read'], ['beliefs:write']] as Scope[][]) {
      const r = await ask(await tokenWith(...scopes), '{ contradictions { id } }');
      expect({ scopes, codes: codes(r.errors) }).toEqual({ scopes, codes: ['FORBIDDEN'] });
    }
    const writer = await tokenWith('beliefs:write');
    const raised = await ask(
      writer,
      `mutation { assertBelief(input: { claimKey: "${fx.tag}/x", statement: "x is 3", value: 3 }) {
      __typename ... on ContradictionRaised { contradiction { claimKey proposed { statement } existing { statement } } } } }`,
    );
    expect(forbiddenAt(raised.errors)).toEqual(['assertBelief.contradiction.existing']);
    expect(raised.data).toBeNull();
    const own = await ask(
      writer,
      `mutation { assertBelief(input: { claimKey: "${fx.tag}/x", statement: "x is 4", value: 4 }) {
      ... on ContradictionRaised { contradiction { id claimKey proposed { statement } } } } }`,
    );
    expect(own.errors).toBeUndefined();
    expect(own.data.assertBelief.contradiction).toMatchObject({
      claimKey: `${fx.tag}/x`,
      proposed: { statement: 'x is 4' },
    });
  });

  it('a premise that fell is no read oracle: effects:propose or beliefs:write alone, naming a RETRACTED belief, learn that it fell, not what it said', async () => {
    const proposer = await tokenWith('effects:propose');
    const p = await ask(
      proposer,
      `mutation($s: [ID!]!) { proposeEffect(input: { kind: "refund", amount: { amountMinor: 1, currency: "USD" }, supportedBy: $s, idempotencyKey: "authz:oracle" }) {
      __typename ... on PremiseRetracted { premise { statement evidence } } } }`,
      { s: [fx.r] },
    );
    expect(forbiddenAt(p.errors)).toEqual(['proposeEffect.premise']);
    const kind = await ask(
      proposer,
      `mutation($s: [ID!]!) { proposeEffect(input: { kind: "refund", amount: { amountMinor: 1, currency: "USD" }, supportedBy: $s, idempotencyKey: "authz:oracle" }) { __typename } }`,
      { s: [fx.r] },
    );
    expect(kind.data.proposeEffect.__typename).toBe('PremiseRetracted');
    const writer = await tokenWith('beliefs:write');
    const w = await ask(
      writer,
      'mutation($d: [ID!]) { assertBelief(input: { claimKey: "authz/oracle", statement: "s", value: 1, derivedFrom: $d }) { ... on PremiseRetracted { premise { statement } } } }',
      { d: [fx.r] },
    );
    expect(forbiddenAt(w.errors)).toEqual(['assertBelief.premise']);
    // A token that may read RETRACTED beliefs reads the premise.
    const reader = await ask(
      await tokenWith('effects:propose', 'receipts:read'),
      `mutation($s: [ID!]!) { proposeEffect(input: { kind: "refund", amount: { amountMinor: 1, currency: "USD" }, supportedBy: $s, idempotencyKey: "authz:oracle" }) {
      ... on PremiseRetracted { premise { claimKey } } } }`,
      { s: [fx.r] },
    );
    expect(reader.errors).toBeUndefined();
    expect(reader.data.proposeEffect.premise.claimKey).toBe(`${fx.tag}/r`);
  });

  describe('MCP applies the same rule', () => {
    let receiptsOnly: Client;
    let both: Client;
    beforeAll(async () => {
      receiptsOnly = await httpClient(`${s.base}/mcp`, await tokenWith('receipts:read'));
      both = await httpClient(`${s.base}/mcp`, await tokenWith('receipts:read', 'beliefs:read'));
    });
    afterAll(async () => {
      await receiptsOnly?.close();
      await both?.close();
    });

    it('receipts:read alone may not search or explain beliefs (they show ACTIVE ones); with beliefs:read it may', async () => {
      expect(await callError(receiptsOnly, 'search_beliefs', { text: `${fx.tag} e` })).toMatch(
        /^FORBIDDEN: search_beliefs: reading an ACTIVE belief needs the scope beliefs:read/,
      );
      expect(await callError(receiptsOnly, 'explain_belief', { claimKey: fx.keys.e })).toMatch(
        /^FORBIDDEN: explain_belief: .*beliefs:read/,
      );
      expect((await call(receiptsOnly, 'get_receipt', { retractionId: fx.retraction })).retraction.reason).toBe(
        'fixture: r was wrong',
      );
      expect((await call(both, 'search_beliefs', { text: `${fx.tag} e` })).hits.length).toBeGreaterThan(0);
      expect((await call(both, 'explain_belief', { claimKey: fx.keys.e })).belief.status).toBe('ACTIVE');
    });

    it("get_receipt by an ACTIVE belief's id tells receipts:read alone what it tells of an id that does not exist: not its claim key, not that it is ACTIVE", async () => {
      const active = await callError(receiptsOnly, 'get_receipt', { beliefId: fx.e });
      const missing = await callError(receiptsOnly, 'get_receipt', { beliefId: '999999' });
      expect(active).not.toContain(fx.keys.e);
      expect(active).not.toMatch(/ACTIVE/);
      expect(active.replace(/\d+/g, 'N')).toBe(missing.replace(/\d+/g, 'N'));
      expect(active).toMatch(/^NOT_FOUND: /);
      // With beliefs:read as well, the belief may be named.
      expect(await callError(both, 'get_receipt', { beliefId: fx.e })).toMatch(
        new RegExp(`^NOT_FOUND: .*${fx.keys.e}.*is ACTIVE`),
      );
    });
  });
});
