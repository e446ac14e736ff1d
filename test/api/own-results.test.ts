import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ReadGrants } from '../../src/agent/access';
import type { Scope } from '../../src/agent/scopes';
import type { Actor } from '../../src/core';
import { assertBelief } from '../../src/belief/belief.service';
import { claimEffect, registerEffectKind } from '../../src/effect/effect.service';
import { gid } from '../../src/kernel/ids';
import { reinstateRetraction } from '../../src/reinstatement/reinstatement.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { inTx } from '../../src/store/tx';
import { gql, type WireError } from '../support/api-client';
import { documentedScopes } from '../support/api-docs';
import { type ApiServer, agentWith, startApiServer } from '../support/api-server';
import { actorIn, engines, expectInvariants } from '../support/engines';
import { type Include, mutationFields, resultSelection } from '../support/result-selection';
import { belief, executed, proposed } from '../support/story';

/**
 * Issue 33, item 4: for every mutation, what its own call created or changed is readable in its answer for that
 * request, whatever the token's scopes, and nothing more. Each case sets up its preconditions through the services,
 * calls the mutation with a token holding only the scope docs/api.md names for it, selecting every field of its
 * result (test/support/result-selection.ts) but the refused ones, and checks:
 * - no error at all, and each `own` path (what the call created or changed) answers;
 * - `grants`: the objects this request's own mutation made readable (src/api/builder.ts grantRead), by type. Also the
 *   ones a scope already opens (an executor reads effects anyway), so removing any grantRead fails here;
 * - `forbidden`, nothing more: each object next to them that the call did not write (supports, the retraction behind
 *   a reversal, the ACTIVE belief a contradiction names, a belief a cascade took down), selected alone on a fresh
 *   set-up, is FORBIDDEN at exactly its path: a grant opens the object, not what it links to.
 */

interface Ctx {
  s: ApiServer;
  owner: Actor & { token: string };
  /** Unique per run of a setup: claim keys, idempotency keys, names. */ tag: string;
}
interface Case {
  mutation: string;
  name: string;
  /** Variable definitions and the mutation's arguments. */
  vars?: string;
  args?: string;
  /** Sets up the preconditions; returns the variables. */
  setup?: (c: Ctx) => Promise<Record<string, unknown>>;
  /** The union member answered. */
  member?: string;
  /** What the call created or changed: each path answers (non-null, no error). */
  own: string[];
  /** The types this request's resolvers granted (grantRead), one per object. */
  grants: string[];
  /** What the call did not write: each path, selected alone, is FORBIDDEN. */
  forbidden: string[];
}

/** An OPEN contradiction on `key` (the second assertion has the stronger evidence: the heuristic accepts it). */
async function contradiction(c: Ctx, key: string): Promise<string> {
  await assertBelief(c.s.core, c.owner, {
    claimKey: key,
    statement: `${key} is 1`,
    value: 1,
    evidence: 'a rumour in a chat group',
  });
  const r = await assertBelief(c.s.core, c.owner, {
    claimKey: key,
    statement: `${key} is 2`,
    value: 2,
    evidence: 'verified document from the official registry',
  });
  if (r.kind !== 'contradiction') throw new Error(`expected a contradiction, got ${r.kind}`);
  return gid('Contradiction', r.contradictionId);
}

/** A retracted belief (for a premise that fell). */
async function fallen(c: Ctx, key: string): Promise<string> {
  const b = await belief(c.s.core, c.owner, key);
  await retractBelief(c.s.core, c.owner, { beliefId: b.id, reason: 'it fell' });
  return gid('Belief', b.id);
}

/** An EXECUTING effect of `kind` resting on a fresh belief `key`. */
async function executing(c: Ctx, kind: string, key: string) {
  const b = await belief(c.s.core, c.owner, key);
  const e = await proposed(c.s.core, c.owner, kind, [b], `${key}:effect`, 500);
  const claimed = await claimEffect(c.s.core, c.owner, { kinds: [kind] });
  if (claimed?.id !== e.id) throw new Error('expected to claim the effect just proposed');
  return { b, e };
}

const ASSERT = 'input: { claimKey: $k, statement: "own", value: $v, derivedFrom: $d, basedOn: $at }';
const ASSERT_VARS = '$k: String!, $v: JSON, $d: [ID!], $at: String';

const CASES: Case[] = [
  {
    mutation: 'createAgent',
    name: 'the agent and its token',
    vars: '$n: String!',
    args: 'input: { name: $n, scopes: ["beliefs:read"] }',
    setup: async (c) => ({ n: `${c.tag}-agent` }),
    own: ['createAgent', 'createAgent.agent', 'createAgent.token'],
    grants: [],
    forbidden: [],
  },
  {
    mutation: 'registerEffectKind',
    name: 'the kind',
    vars: '$k: String!',
    args: 'input: { kind: $k, reversible: true }',
    setup: async (c) => ({ k: `${c.tag}_registered` }),
    own: ['registerEffectKind', 'registerEffectKind.kind'],
    grants: [],
    forbidden: [],
  },
  // ------------------------------------------------------------------ beliefs:write
  {
    mutation: 'assertBelief',
    name: 'the belief it wrote',
    vars: ASSERT_VARS,
    args: ASSERT,
    setup: async (c) => ({ k: `${c.tag}/asserted`, v: 1 }),
    member: 'BeliefAsserted',
    own: ['assertBelief.belief'],
    grants: ['Belief'],
    forbidden: [],
  },
  {
    mutation: 'assertBelief',
    name: 'the belief it corroborated',
    vars: ASSERT_VARS,
    args: ASSERT,
    setup: async (c) => (
      await belief(c.s.core, c.owner, `${c.tag}/corroborated`, [], 1),
      { k: `${c.tag}/corroborated`, v: 1 }
    ),
    member: 'BeliefCorroborated',
    own: ['assertBelief.belief'],
    grants: ['Belief'],
    forbidden: [],
  },
  {
    mutation: 'assertBelief',
    name: 'the contradiction it raised, not the ACTIVE belief it contradicts',
    vars: ASSERT_VARS,
    args: ASSERT,
    setup: async (c) => (
      await belief(c.s.core, c.owner, `${c.tag}/contradicted`, [], 1),
      { k: `${c.tag}/contradicted`, v: 2 }
    ),
    own: ['assertBelief.contradiction', 'assertBelief.contradiction.proposed'],
    grants: ['Contradiction'],
    forbidden: ['assertBelief.contradiction.existing'],
  },
  {
    mutation: 'assertBelief',
    name: 'not the premise that fell',
    vars: ASSERT_VARS,
    args: ASSERT,
    setup: async (c) => ({ k: `${c.tag}/on-fallen`, v: 1, d: [await fallen(c, `${c.tag}/fallen-a`)] }),
    own: ['assertBelief'],
    grants: [],
    forbidden: ['assertBelief.premise'],
  },
  {
    mutation: 'assertBelief',
    name: 'not the belief written since its read',
    vars: ASSERT_VARS,
    args: ASSERT,
    setup: async (c) => {
      const read = await gql(
        c.s.http,
        '{ search(input: { text: "own changed", k: 1 }) { snapshot } }',
        {},
        c.owner.token,
      );
      await belief(c.s.core, c.owner, `${c.tag}/changed`, [], 1);
      return { k: `${c.tag}/changed`, v: 2, at: read.data.search.snapshot };
    },
    own: ['assertBelief'],
    grants: [],
    forbidden: ['assertBelief.current'],
  },
  {
    mutation: 'addJustification',
    name: 'the belief it justified, not the effect resting on it',
    vars: '$b: ID!, $p: [ID!]!',
    args: 'input: { beliefId: $b, premises: $p }',
    setup: async (c) => {
      const p = await belief(c.s.core, c.owner, `${c.tag}/j-p`);
      const b = await belief(c.s.core, c.owner, `${c.tag}/j-b`, [await belief(c.s.core, c.owner, `${c.tag}/j-q`)]);
      await proposed(c.s.core, c.owner, 'refund', [b], `${c.tag}:j-effect`, 100);
      return { b: gid('Belief', b.id), p: [gid('Belief', p.id)] };
    },
    own: ['addJustification', 'addJustification.justifications'],
    grants: ['Belief'],
    forbidden: ['addJustification.effects.0'],
  },
  // ------------------------------------------------------------------ beliefs:retract
  {
    mutation: 'retractBelief',
    name: 'the receipt and its totals, not what the cascade reached',
    vars: '$b: ID!',
    args: 'input: { beliefId: $b, reason: "own" }',
    setup: async (c) => {
      const root = await belief(c.s.core, c.owner, `${c.tag}/rt`);
      const dep = await belief(c.s.core, c.owner, `${c.tag}/rt-dep`, [root]);
      await proposed(c.s.core, c.owner, 'refund', [dep], `${c.tag}:rt-pending`, 100);
      await executed(
        c.s.core,
        c.owner,
        await proposed(c.s.core, c.owner, 'own_payout', [root], `${c.tag}:rt-paid`, 200),
        `${c.tag}-bank-1`,
      );
      return { b: gid('Belief', root.id) };
    },
    own: ['retractBelief', 'retractBelief.totals'],
    grants: ['Retraction'],
    forbidden: ['retractBelief.root', 'retractBelief.cancelledEffects.0', 'retractBelief.reversals.0'],
  },
  {
    mutation: 'reinstateRetraction',
    name: 'the reinstatement',
    vars: '$r: ID!',
    args: 'input: { retractionId: $r, reason: "own" }',
    setup: async (c) => {
      const b = await belief(c.s.core, c.owner, `${c.tag}/rein`);
      return {
        r: gid(
          'Retraction',
          (await retractBelief(c.s.core, c.owner, { beliefId: b.id, reason: 'looked wrong' })).retractionId,
        ),
      };
    },
    member: 'RetractionReinstated',
    own: ['reinstateRetraction.reinstatement', 'reinstateRetraction.reinstatement.totals'],
    grants: ['Reinstatement'],
    forbidden: ['reinstateRetraction.reinstatement.retraction'],
  },
  {
    mutation: 'reinstateRetraction',
    name: 'the blocked reinstatement and the contradiction it raised',
    vars: '$r: ID!',
    args: 'input: { retractionId: $r, reason: "own" }',
    setup: async (c) => {
      const b = await belief(c.s.core, c.owner, `${c.tag}/blocked`, [], 1);
      const { retractionId } = await retractBelief(c.s.core, c.owner, { beliefId: b.id, reason: 'looked wrong' });
      await belief(c.s.core, c.owner, `${c.tag}/blocked`, [], 2);
      return { r: gid('Retraction', retractionId) };
    },
    own: [
      'reinstateRetraction.reinstatement',
      'reinstateRetraction.contradiction',
      'reinstateRetraction.contradiction.proposed',
    ],
    grants: ['Reinstatement', 'Contradiction'],
    forbidden: ['reinstateRetraction.reinstatement.retraction', 'reinstateRetraction.contradiction.existing'],
  },
  // ------------------------------------------------------------------ contradictions:adjudicate
  {
    mutation: 'adjudicateContradiction',
    name: 'the contradiction, the belief it accepted and the retraction it wrote',
    vars: '$c: ID!',
    args: 'contradictionId: $c',
    setup: async (c) => ({ c: await contradiction(c, `${c.tag}/adjudicated`) }),
    own: ['adjudicateContradiction', 'adjudicateContradiction.accepted', 'adjudicateContradiction.resolution'],
    grants: ['Contradiction', 'Belief', 'Retraction'],
    forbidden: ['adjudicateContradiction.existing'],
  },
  {
    mutation: 'resolveContradiction',
    name: 'KEEP_EXISTING: the contradiction, not the belief kept',
    vars: '$c: ID!',
    args: 'input: { contradictionId: $c, verdict: KEEP_EXISTING, rationale: "own" }',
    setup: async (c) => ({ c: await contradiction(c, `${c.tag}/kept`) }),
    own: ['resolveContradiction', 'resolveContradiction.proposed'],
    grants: ['Contradiction'],
    forbidden: ['resolveContradiction.existing'],
  },
  {
    mutation: 'resolveContradiction',
    name: 'ACCEPT_PROPOSED: the contradiction, the belief it wrote and its retraction',
    vars: '$c: ID!',
    args: 'input: { contradictionId: $c, verdict: ACCEPT_PROPOSED, rationale: "own" }',
    setup: async (c) => ({ c: await contradiction(c, `${c.tag}/accepted`) }),
    own: ['resolveContradiction', 'resolveContradiction.accepted', 'resolveContradiction.resolution'],
    grants: ['Contradiction', 'Belief', 'Retraction'],
    forbidden: ['resolveContradiction.existing'],
  },
  // ------------------------------------------------------------------ effects:propose
  {
    mutation: 'proposeEffect',
    name: 'the effect, not its supports',
    vars: '$s: [ID!]!, $k: String!',
    args: 'input: { kind: "refund", amount: { amountMinor: 100, currency: "USD" }, supportedBy: $s, idempotencyKey: $k }',
    setup: async (c) => ({
      s: [gid('Belief', (await belief(c.s.core, c.owner, `${c.tag}/proposed`)).id)],
      k: `${c.tag}:proposed`,
    }),
    own: ['proposeEffect.effect'],
    grants: ['Effect'],
    forbidden: ['proposeEffect.effect.supportedBy.0'],
  },
  {
    mutation: 'proposeEffect',
    name: 'not the premise that fell',
    vars: '$s: [ID!]!, $k: String!',
    args: 'input: { kind: "refund", amount: { amountMinor: 100, currency: "USD" }, supportedBy: $s, idempotencyKey: $k }',
    setup: async (c) => ({ s: [await fallen(c, `${c.tag}/fallen-b`)], k: `${c.tag}:on-fallen` }),
    own: ['proposeEffect'],
    grants: [],
    forbidden: ['proposeEffect.premise'],
  },
  {
    mutation: 'restoreEffect',
    name: 'the effect, not its supports',
    vars: '$e: ID!',
    args: 'effectId: $e',
    setup: async (c) => {
      const b = await belief(c.s.core, c.owner, `${c.tag}/restore`);
      const e = await proposed(c.s.core, c.owner, 'refund', [b], `${c.tag}:restore`, 100);
      const { retractionId } = await retractBelief(c.s.core, c.owner, { beliefId: b.id, reason: 'looked wrong' });
      await reinstateRetraction(c.s.core, c.owner, { retractionId, reason: 'it was right' });
      return { e: gid('Effect', e.id) };
    },
    own: ['restoreEffect'],
    grants: ['Effect'],
    forbidden: ['restoreEffect.supportedBy.0'],
  },
  // ------------------------------------------------------------------ effects:execute
  {
    mutation: 'claimEffect',
    name: 'the effect it claimed, not its supports',
    args: 'input: { kinds: ["own_claimed"] }',
    setup: async (c) => (
      await proposed(
        c.s.core,
        c.owner,
        'own_claimed',
        [await belief(c.s.core, c.owner, `${c.tag}/claimed`)],
        `${c.tag}:claimed`,
        100,
      ),
      {}
    ),
    own: ['claimEffect'],
    grants: ['Effect'],
    forbidden: ['claimEffect.supportedBy.0'],
  },
  {
    mutation: 'completeEffect',
    name: 'the effect it completed, not its supports',
    vars: '$e: ID!, $ref: String!',
    args: 'input: { effectId: $e, externalRef: $ref }',
    setup: async (c) => ({
      e: gid('Effect', (await executing(c, 'own_completed', `${c.tag}/completed`)).e.id),
      ref: `${c.tag}-bank`,
    }),
    own: ['completeEffect'],
    grants: ['Effect'],
    forbidden: ['completeEffect.supportedBy.0', 'completeEffect.supportAtExecution.0'],
  },
  {
    mutation: 'completeEffect',
    name: 'the reversal its completion recorded, not the retraction behind it',
    vars: '$e: ID!, $ref: String!',
    args: 'input: { effectId: $e, externalRef: $ref }',
    setup: async (c) => {
      const { b, e } = await executing(c, 'own_completed', `${c.tag}/reached`);
      await retractBelief(c.s.core, c.owner, { beliefId: b.id, reason: 'reached while executing' });
      return { e: gid('Effect', e.id), ref: `${c.tag}-bank` };
    },
    own: ['completeEffect', 'completeEffect.reversal'],
    grants: ['Effect', 'Reversal'],
    forbidden: ['completeEffect.supportedBy.0', 'completeEffect.supportAtExecution.0', 'completeEffect.reachedBy'],
  },
  {
    mutation: 'failEffect',
    name: 'the effect it failed, not its supports',
    vars: '$e: ID!',
    args: 'input: { effectId: $e, reason: "own" }',
    setup: async (c) => ({ e: gid('Effect', (await executing(c, 'own_failed', `${c.tag}/failed`)).e.id) }),
    own: ['failEffect'],
    grants: ['Effect'],
    forbidden: ['failEffect.supportedBy.0'],
  },
  {
    mutation: 'confirmReversal',
    name: 'the reversal it confirmed, not the retraction behind it',
    vars: '$r: ID!, $ref: String!',
    args: 'input: { reversalId: $r, providerRef: $ref }',
    setup: async (c) => {
      const b = await belief(c.s.core, c.owner, `${c.tag}/confirmed`);
      const e = await executed(
        c.s.core,
        c.owner,
        await proposed(c.s.core, c.owner, 'own_payout', [b], `${c.tag}:confirmed`, 300),
        `${c.tag}-bank-2`,
      );
      await retractBelief(c.s.core, c.owner, { beliefId: b.id, reason: 'paid on a wrong belief' });
      const r = await inTx(c.s.core.store, { fleet: c.owner.fleet, readOnly: true }, (tx) =>
        tx.selectFrom('reversals').select('id').where('effect_id', '=', e.id).executeTakeFirstOrThrow(),
      );
      return { r: gid('Reversal', r.id), ref: `prv_${c.tag}_1` };
    },
    own: ['confirmReversal'],
    grants: ['Reversal'],
    forbidden: ['confirmReversal.retraction'],
  },
];

/** Every error is a FORBIDDEN read refusal; their paths, dotted and sorted. */
function forbiddenAt(errors: readonly WireError[] | undefined): string[] {
  for (const e of errors ?? [])
    expect({ path: e.path, code: e.extensions?.code, message: e.message }).toMatchObject({
      code: 'FORBIDDEN',
      message: expect.stringMatching(/needs the scope/),
    });
  return (errors ?? []).map((e) => (e.path ?? []).join('.')).sort();
}

it('the cases cover every mutation of the schema, each with the scopes docs/api.md names', () => {
  expect([...new Set(CASES.map((c) => c.mutation))].sort()).toEqual(mutationFields().sort());
  const doc = documentedScopes();
  for (const m of mutationFields()) expect({ m, scopes: doc.get(m) }).toEqual({ m, scopes: expect.any(Array) });
});

describe.each(engines())('own results on %s', (engine) => {
  let s: ApiServer;
  let owner: Actor & { token: string };
  let grants: { mock: { calls: Array<[string, unknown]> }; mockClear(): void };

  beforeAll(async () => {
    s = await startApiServer(engine);
    owner = await actorIn(s.db.store, 'acme', 'owner');
    for (const kind of ['refund', 'own_payout', 'own_claimed', 'own_completed', 'own_failed'])
      await registerEffectKind(s.core, owner, { kind, reversible: true });
    // The app runs in this process: every grant a request's resolvers make passes here (and still takes effect).
    grants = vi.spyOn(ReadGrants.prototype, 'grant');
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    if (s) await expectInvariants(s.db.store);
    await s?.close();
  });

  let runs = 0;
  /** Sets the case up afresh and calls its mutation with a token holding only its documented scopes, selecting what `include` keeps. */
  async function run(c: Case, include: Include) {
    const variables = c.setup ? await c.setup({ s, owner, tag: `own${++runs}` }) : {};
    const scopes = documentedScopes().get(c.mutation) as Scope[];
    const token = (await agentWith(s.db.store, 'acme', scopes, 'own')).token;
    const document = `mutation${c.vars ? `(${c.vars})` : ''} { ${c.mutation}${c.args ? `(${c.args})` : ''} ${resultSelection(c.mutation, include)} }`;
    grants.mockClear();
    const r = await gql(s.http, document, variables, token);
    const granted = grants.mock.calls.map(([type]) => type).sort();
    await expectInvariants(s.db.store);
    return { r, scopes, granted };
  }
  /** A path of the table without its list indices, as resultSelection names fields. */
  const fieldsOf = (path: string) =>
    path
      .split('.')
      .slice(1)
      .filter((p) => !/^\d+$/.test(p));
  const within = (path: readonly string[], prefix: readonly string[]) => prefix.every((p, i) => path[i] === p);

  it.each(CASES.map((c) => [`${c.mutation}: ${c.name}`, c] as const))('%s', async (_name, c) => {
    // Every field but the refused ones: no error at all, so the call's own objects answered; and the grants it made.
    const refused = c.forbidden.map(fieldsOf);
    const own = await run(c, (path) => !refused.some((f) => within(path, f)));
    expect({ scopes: own.scopes, errors: own.r.errors }).toEqual({ scopes: own.scopes, errors: undefined });
    for (const path of c.own)
      expect({
        path,
        answer:
          path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | null)?.[k], own.r.data) ?? null,
      }).toEqual({ path, answer: expect.anything() });
    if (c.member) expect(own.r.data[c.mutation].__typename).toBe(c.member);
    expect(own.granted).toEqual([...c.grants].sort());
    // Nothing more: each refused field alone, on a fresh set-up (a refused non-null field nulls its parent, and
    // graphql-js may answer before a second refusal is recorded), is FORBIDDEN at exactly its path.
    for (const path of c.forbidden) {
      const alone = await run(c, (p) => within(fieldsOf(path), p));
      expect({ path, forbidden: forbiddenAt(alone.r.errors) }).toEqual({ path, forbidden: [path] });
    }
  });
});
