import { sql } from 'kysely';
import { type BeliefRow, activeOnClaim } from '../../belief/belief.repository';
import { addJustification, assertBelief } from '../../belief/belief.service';
import { createAgent } from '../../agent/agent.service';
import { adjudicateContradiction, resolveContradiction } from '../../contradiction/contradiction.service';
import { claimEffect, completeEffect, failEffect, proposeEffect, registerEffectKind } from '../../effect/effect.service';
import { confirmReversal } from '../../reversal/reversal.service';
import { previewRetraction, retractBelief } from '../../retraction/retraction.service';
import * as v from '../../validation';
import { actorOf, builder, grantRead } from '../builder';
import { parseGid, parseGids } from '../../kernel/ids';
import { fleetRead } from '../loaders';
import { connectionOf, decodeIdCursor, encodeIdCursor, firstArg } from '../pagination';
import { AgentCreatedRef, AgentRef } from './agent';
import { BeliefConnection, BeliefRef, BeliefStatusEnum } from './belief';
import { ContradictionRef, ContradictionStatusEnum, ResolveContradictionInput } from './contradiction';
import { EffectConnection, EffectKindRef, EffectProposedRef, EffectRef, EffectStatusEnum } from './effect';
import { MoneyInput } from './money';
import { PreviewRef, RetractionConnection, RetractionRef } from './retraction';
import { ReversalConnection, ReversalRef, ReversalStatusEnum } from './reversal';
import { SearchInput, SearchResultRef, search } from './search';
import { activeOnClaimAsOf } from '../../belief/belief-history.repository';
import { beliefIdsArg, beliefsAsOfPage, IDS_MAX } from './as-of';

const AS_OF = 'Read the fleet as it stood at this instant (every change dated at or before it, to the millisecond). Omitted: now.';

const pageArgs = (t: { arg: { int: Function; string: Function } }) => ({
  first: (t.arg.int as (o: object) => never)({ description: 'Page size, at most 500 (default 50).' }),
  after: (t.arg.string as (o: object) => never)({ description: 'A cursor from this connection.' }),
});

/** Newest-first keyset page over one fleet table, with totalCount. */
async function newestFirst(ctx: Parameters<typeof fleetRead>[0], table: 'beliefs' | 'effects' | 'reversals' | 'retractions', where: ReturnType<typeof sql>, args: { first?: number | null; after?: string | null }) {
  const first = firstArg(args.first);
  const after = decodeIdCursor('after', args.after);
  return fleetRead(ctx, async (tx) => {
    const rows = await sql<{ id: string }>`
      SELECT * FROM ${sql.table(table)} WHERE ${where} ${after ? sql`AND id < ${after}::bigint` : sql``} ORDER BY id DESC LIMIT ${first + 1}`.execute(tx);
    const total = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.table(table)} WHERE ${where}`.execute(tx);
    for (const r of rows.rows) r.id = String(r.id);
    return connectionOf(rows.rows, first, (r) => encodeIdCursor(r.id), total.rows[0]!.n, after !== null) as never;
  });
}

builder.queryFields((t) => ({
  viewer: t.field({ type: AgentRef, authScopes: { authenticated: true }, description: 'The agent your token belongs to.', resolve: (_r, _a, ctx) => ctx.agent!.id }),
  belief: t.field({
    type: BeliefRef, nullable: true, authScopes: { scope: 'beliefs:read' }, description: 'A belief of your fleet by id.',
    args: { id: t.arg.id({ required: true, description: 'Global id.' }) },
    resolve: (_r, a) => parseGid('id', String(a.id), 'Belief'),
  }),
  beliefByClaim: t.field({
    type: BeliefRef, nullable: true, authScopes: { scope: 'beliefs:read' }, description: 'The ACTIVE belief for a claim, if any (or the one ACTIVE at asOf).',
    args: { claimKey: t.arg.string({ required: true, description: 'The claim key.' }), asOf: t.arg({ type: 'DateTime', description: AS_OF }) },
    resolve: async (_r, a, ctx) => {
      const key = v.claimKey('claimKey', a.claimKey);
      if (a.asOf) return fleetRead(ctx, async (tx) => (await activeOnClaimAsOf(tx, ctx.agent!.fleet_id, key, a.asOf!)) ?? null);
      return fleetRead(ctx, async (tx) =>
        (await activeOnClaim(tx, ctx.agent!.fleet_id, key).select('id').executeTakeFirst())?.id ?? null);
    },
  }),
  search: t.field({
    type: SearchResultRef, authScopes: { scope: 'beliefs:read' },
    description: 'READ phase: approximate nearest neighbours over belief embeddings, at a recorded snapshot.',
    args: { input: t.arg({ type: SearchInput, required: true, description: 'What to search for.' }) },
    resolve: (_r, a, ctx) => search(ctx, a.input),
  }),
  beliefs: t.field({
    type: BeliefConnection, authScopes: { scope: 'beliefs:read' }, description: 'Beliefs of the caller\'s fleet, newest first.',
    args: {
      claimKeyPrefix: t.arg.string({ description: 'Only claims whose key starts with this.' }),
      status: t.arg({ type: BeliefStatusEnum, description: 'Only beliefs in this status (at asOf, when given).' }),
      asOf: t.arg({ type: 'DateTime', description: AS_OF }),
      ids: t.arg.idList({ description: `Only these beliefs (global ids, at most ${IDS_MAX}); one that is not a belief of your fleet is simply absent.` }),
      ...pageArgs(t),
    },
    resolve: (_r, a, ctx) => {
      const prefix = v.claimKeyPrefix('claimKeyPrefix', a.claimKeyPrefix);
      const ids = beliefIdsArg(a.ids);
      if (a.asOf) return beliefsAsOfPage(ctx, a.asOf, { prefix, status: a.status ?? null, ids, first: a.first, after: a.after });
      const where = sql`fleet_id = ${ctx.agent!.fleet_id}
        ${ids ? sql`AND id = ANY(${ids}::bigint[])` : sql``}
        ${prefix ? sql`AND claim_key LIKE ${prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + '%'}` : sql``}
        ${a.status ? sql`AND status = ${a.status}` : sql``}`;
      return newestFirst(ctx, 'beliefs', where, a);
    },
  }),
  previewRetraction: t.field({
    type: PreviewRef, authScopes: { scope: 'beliefs:read' }, description: 'What retracting this belief would do, computed without changing anything.',
    args: { beliefId: t.arg.id({ required: true, description: 'The belief to preview.' }) },
    resolve: (_r, a, ctx) => previewRetraction(ctx.core, actorOf(ctx), { beliefId: parseGid('beliefId', String(a.beliefId), 'Belief') }),
  }),
  retraction: t.field({
    type: RetractionRef, nullable: true, authScopes: { scope: 'receipts:read' }, description: 'A receipt by id.',
    args: { id: t.arg.id({ required: true, description: 'Global id.' }) },
    resolve: (_r, a) => parseGid('id', String(a.id), 'Retraction'),
  }),
  retractions: t.field({
    type: RetractionConnection, authScopes: { scope: 'receipts:read' }, description: 'Receipts, newest first.',
    args: pageArgs(t),
    resolve: (_r, a, ctx) => newestFirst(ctx, 'retractions', sql`fleet_id = ${ctx.agent!.fleet_id}`, a),
  }),
  effects: t.field({
    type: EffectConnection, authScopes: { $any: { scope: 'effects:propose', $any: { scope: 'effects:execute', $any: { scope: 'receipts:read' } } } } as never,
    description: 'Effects of your fleet, newest first.',
    args: { status: t.arg({ type: EffectStatusEnum, description: 'Only effects in this status.' }), ...pageArgs(t) },
    resolve: (_r, a, ctx) => newestFirst(ctx, 'effects', sql`fleet_id = ${ctx.agent!.fleet_id} ${a.status ? sql`AND status = ${a.status}` : sql``}`, a),
  }),
  effectKinds: t.field({
    type: [EffectKindRef], authScopes: { authenticated: true }, description: 'The effect kinds registered in your fleet.',
    resolve: (_r, _a, ctx) => fleetRead(ctx, (tx) => tx.selectFrom('effect_kinds').select(['kind', 'reversible']).orderBy('kind').execute()),
  }),
  reversals: t.field({
    type: ReversalConnection, authScopes: { scope: 'receipts:read' }, description: 'Reversals of your fleet, newest first.',
    args: { status: t.arg({ type: ReversalStatusEnum, description: 'Only reversals in this status.' }), ...pageArgs(t) },
    resolve: (_r, a, ctx) => newestFirst(ctx, 'reversals', sql`fleet_id = ${ctx.agent!.fleet_id} ${a.status ? sql`AND status = ${a.status}` : sql``}`, a),
  }),
  contradictions: t.field({
    // The Contradiction type's own rule: an adjudicator lists what it is to decide.
    type: [ContradictionRef], authScopes: { $any: { scope: 'beliefs:read', $any: { scope: 'contradictions:adjudicate' } } } as never,
    description: 'Contradictions of your fleet, oldest first (at most 500). Needs beliefs:read or contradictions:adjudicate.',
    args: { status: t.arg({ type: ContradictionStatusEnum, description: 'Only contradictions in this status.' }) },
    resolve: (_r, a, ctx) =>
      fleetRead(ctx, async (tx) => {
        let q = tx.selectFrom('contradictions').select('id').where('fleet_id', '=', ctx.agent!.fleet_id);
        if (a.status) q = q.where('status', '=', a.status);
        return (await q.orderBy('id').limit(500).execute()).map((r) => r.id);
      }),
  }),
}));

// ------------------------------------------------------------------ mutations

const CreateAgentInput = builder.inputType('CreateAgentInput', {
  description: 'A new agent.',
  fields: (t) => ({
    name: t.string({ required: true, description: 'Unique within its fleet.' }),
    scopes: t.stringList({ required: true, description: 'Scopes to grant.' }),
    fleet: t.string({ description: 'Defaults to the caller\'s fleet. Only the operator (the bootstrap agent) may name another fleet.' }),
  }),
});

const AssertBeliefInput = builder.inputType('AssertBeliefInput', {
  description: 'COMMIT of a turn.',
  fields: (t) => ({
    claimKey: t.string({ required: true, description: 'What the belief is about. Normalised to Unicode NFC: composed and decomposed spellings are one claim.' }),
    statement: t.string({ required: true, description: 'The assertion in words.' }),
    value: t.field({ type: 'JSON', description: 'The asserted value.' }),
    evidence: t.string({ description: 'Outside evidence for it.' }),
    derivedFrom: t.idList({ description: 'Premises this belief is derived from (one justification). Every premise must be ACTIVE at commit.' }),
    basedOn: t.string({ description: 'The snapshot returned by the READ this turn was based on.' }),
  }),
});

const BeliefAssertedRef = builder.simpleObject('BeliefAsserted', {
  description: 'The belief was written ACTIVE.',
  fields: (t) => ({ belief: t.field({ type: BeliefRef, description: 'The new belief.' }) }),
});
const BeliefCorroboratedRef = builder.simpleObject('BeliefCorroborated', {
  description: 'The claim already holds an ACTIVE belief with the same value.',
  fields: (t) => ({ belief: t.field({ type: BeliefRef, description: 'The belief that already holds.' }) }),
});
const ContradictionRaisedRef = builder.simpleObject('ContradictionRaised', {
  description: 'The claim holds an ACTIVE belief with a different value; nothing was written to it.',
  fields: (t) => ({ contradiction: t.field({ type: ContradictionRef, description: 'The contradiction raised.' }) }),
});
const PremiseRetractedRef = builder.simpleObject('PremiseRetracted', {
  description: 'A premise was retracted between READ and COMMIT; nothing was written.',
  fields: (t) => ({ premise: t.field({ type: BeliefRef, description: 'The premise that fell.' }) }),
});
const ClaimChangedRef = builder.simpleObject('ClaimChangedSinceRead', {
  description: 'The claim was written after the READ named in basedOn; nothing was written. READ and THINK again.',
  fields: (t) => ({
    claimKey: t.string({ description: 'The claim.' }),
    current: t.field({ type: BeliefRef, nullable: true, description: 'What the claim holds now.' }),
  }),
});

const AssertBeliefResult = builder.unionType('AssertBeliefResult', {
  description: 'What COMMIT decided.',
  types: [BeliefAssertedRef, BeliefCorroboratedRef, ContradictionRaisedRef, PremiseRetractedRef, ClaimChangedRef],
  resolveType: (r) => (r as unknown as { __typename: string }).__typename,
});

const ProposeEffectResult = builder.unionType('ProposeEffectResult', {
  description: 'The effect, or the support that fell.',
  types: [EffectProposedRef, PremiseRetractedRef],
  resolveType: (r) => (r as unknown as { __typename: string }).__typename,
});

const typed = <T extends object>(__typename: string, o: T) => ({ __typename, ...o });

builder.mutationFields((t) => ({
  createAgent: t.field({
    type: AgentCreatedRef, authScopes: { scope: 'admin' }, description: 'Admin only: creates an agent and its bearer token.',
    args: { input: t.arg({ type: CreateAgentInput, required: true, description: 'The agent.' }) },
    resolve: async (_r, a, ctx) => {
      const { agent, token } = await createAgent(ctx.core, actorOf(ctx), a.input);
      return { agent, token } as never;
    },
  }),
  assertBelief: t.field({
    type: AssertBeliefResult, authScopes: { scope: 'beliefs:write' },
    description: 'COMMIT phase: a short serializable transaction that locks the claim, reads what is believed, and writes or raises a contradiction.',
    args: { input: t.arg({ type: AssertBeliefInput, required: true, description: 'The belief.' }) },
    resolve: async (_r, a, ctx) => {
      const r = await assertBelief(ctx.core, actorOf(ctx), { ...a.input, derivedFrom: parseGids('input.derivedFrom', a.input.derivedFrom as string[] | null, 'Belief') });
      // The caller's own belief, or the one that already says the same. Not a premise that fell: naming any
      // RETRACTED belief's id would read it without a write (a read oracle); it follows the Belief rule, as
      // ClaimChangedSinceRead.current does, another agent's belief the caller must READ again to see.
      if (r.kind === 'asserted' || r.kind === 'corroborated') grantRead(ctx, 'Belief', r.belief.id);
      // The contradiction the caller's own assertion raised: its proposal is what the caller sent.
      if (r.kind === 'contradiction') grantRead(ctx, 'Contradiction', r.contradictionId);
      switch (r.kind) {
        case 'asserted': return typed('BeliefAsserted', { belief: r.belief }) as never;
        case 'corroborated': return typed('BeliefCorroborated', { belief: r.belief }) as never;
        case 'contradiction': return typed('ContradictionRaised', { contradiction: r.contradictionId }) as never;
        case 'premiseRetracted': return typed('PremiseRetracted', { premise: r.premise }) as never;
        case 'claimChanged': return typed('ClaimChangedSinceRead', { claimKey: r.claimKey, current: r.current }) as never;
      }
    },
  }),
  addJustification: t.field({
    type: BeliefRef, authScopes: { scope: 'beliefs:write' }, description: 'Adds an alternative justification to an existing belief. Rejects cycles.',
    args: { input: t.arg({ type: builder.inputType('AddJustificationInput', {
      description: 'Another set of premises for a belief.',
      fields: (f) => ({
        beliefId: f.id({ required: true, description: 'The belief.' }),
        premises: f.idList({ required: true, description: 'Its new premises (all ACTIVE).' }),
      }),
    }), required: true, description: 'The justification.' }) },
    resolve: async (_r, a, ctx) => {
      const b = (await addJustification(ctx.core, actorOf(ctx), {
        beliefId: parseGid('input.beliefId', String(a.input.beliefId), 'Belief'),
        premises: parseGids('input.premises', a.input.premises as string[], 'Belief'),
      })) as BeliefRow;
      grantRead(ctx, 'Belief', b.id);
      return b;
    },
  }),
  retractBelief: t.field({
    type: RetractionRef, authScopes: { scope: 'beliefs:retract' },
    description: 'Retracts a belief and cascades in one transaction. Retracting an already retracted belief returns its original receipt and writes nothing.',
    args: { input: t.arg({ type: builder.inputType('RetractBeliefInput', {
      description: 'What to retract and why.',
      fields: (f) => ({
        beliefId: f.id({ required: true, description: 'The belief that turned out false.' }),
        reason: f.string({ required: true, description: 'Why (kept on the receipt).' }),
      }),
    }), required: true, description: 'The retraction.' }) },
    resolve: async (_r, a, ctx) => {
      const { retractionId } = await retractBelief(ctx.core, actorOf(ctx), { beliefId: parseGid('input.beliefId', String(a.input.beliefId), 'Belief'), reason: a.input.reason });
      grantRead(ctx, 'Retraction', retractionId);
      return retractionId;
    },
  }),
  adjudicateContradiction: t.field({
    type: ContradictionRef, authScopes: { scope: 'contradictions:adjudicate' },
    description: 'Runs the configured adjudicator under the claim\'s lease; exactly one adjudicator holds a claim at a time.',
    args: { contradictionId: t.arg.id({ required: true, description: 'The contradiction.' }) },
    resolve: (_r, a, ctx) =>
      adjudicateContradiction(ctx.core, actorOf(ctx), ctx.adjudicator, parseGid('contradictionId', String(a.contradictionId), 'Contradiction'), {
        holder: `${ctx.agent!.name}#${ctx.requestId}`,
      }),
  }),
  resolveContradiction: t.field({
    type: ContradictionRef, authScopes: { scope: 'contradictions:adjudicate' }, description: 'An agent\'s own verdict on a contradiction not under a live lease.',
    args: { input: t.arg({ type: ResolveContradictionInput, required: true, description: 'The verdict.' }) },
    resolve: (_r, a, ctx) =>
      resolveContradiction(ctx.core, actorOf(ctx), ctx.agent!.name, {
        contradictionId: parseGid('input.contradictionId', String(a.input.contradictionId), 'Contradiction'), verdict: a.input.verdict, rationale: a.input.rationale,
      }),
  }),
  registerEffectKind: t.field({
    type: EffectKindRef, authScopes: { scope: 'admin' }, description: 'Registers a kind of effect and whether a compensation handler exists for it.',
    args: { input: t.arg({ type: builder.inputType('RegisterEffectKindInput', {
      description: 'An effect kind.',
      fields: (f) => ({
        kind: f.string({ required: true, description: 'Lower-case name, e.g. refund.' }),
        reversible: f.boolean({ required: true, description: 'Whether a compensation handler exists.' }),
      }),
    }), required: true, description: 'The kind.' }) },
    resolve: (_r, a, ctx) => registerEffectKind(ctx.core, actorOf(ctx), a.input),
  }),
  proposeEffect: t.field({
    type: ProposeEffectResult, authScopes: { scope: 'effects:propose' }, description: 'Writes a PENDING effect resting on ACTIVE beliefs.',
    args: { input: t.arg({ type: builder.inputType('ProposeEffectInput', {
      description: 'An effect.',
      fields: (f) => ({
        kind: f.string({ required: true, description: 'A registered effect kind.' }),
        amount: f.field({ type: MoneyInput, description: 'Money it moves, if any.' }),
        payload: f.field({ type: 'JSON', description: 'What the executor needs.' }),
        supportedBy: f.idList({ required: true, description: 'Beliefs this effect rests on. All must be ACTIVE at commit.' }),
        idempotencyKey: f.string({ required: true, description: 'Caller\'s key; proposing the same effect again under it returns the first effect; a different effect under it is a CONFLICT naming the first.' }),
      }),
    }), required: true, description: 'The effect.' }) },
    resolve: async (_r, a, ctx) => {
      const r = await proposeEffect(ctx.core, actorOf(ctx), { ...a.input, supportedBy: parseGids('input.supportedBy', a.input.supportedBy as string[], 'Belief') });
      // The effect it proposed; a premise that fell follows the Belief rule (see assertBelief).
      if (r.kind === 'proposed') grantRead(ctx, 'Effect', r.effect.id);
      return (r.kind === 'proposed' ? typed('EffectProposed', { effect: r.effect }) : typed('PremiseRetracted', { premise: r.premise })) as never;
    },
  }),
  claimEffect: t.field({
    type: EffectRef, nullable: true, authScopes: { scope: 'effects:execute' },
    description: 'Executor takes the oldest PENDING effect whose supports are all ACTIVE and marks it EXECUTING. Null when none is ready.',
    args: { input: t.arg({ type: builder.inputType('ClaimEffectInput', {
      description: 'Which effects an executor takes.',
      fields: (f) => ({ kinds: f.stringList({ description: 'Only these kinds.' }) }),
    }), description: 'Filter.' }) },
    resolve: async (_r, a, ctx) => {
      const e = await claimEffect(ctx.core, actorOf(ctx), { kinds: a.input?.kinds ?? null });
      grantRead(ctx, 'Effect', e?.id);
      return e;
    },
  }),
  completeEffect: t.field({
    type: EffectRef, authScopes: { scope: 'effects:execute' },
    description: 'EXECUTING to EXECUTED. If a support was retracted while it ran, its reversal is recorded in the same transaction.',
    args: { input: t.arg({ type: builder.inputType('CompleteEffectInput', {
      description: 'An executor\'s report that the effect happened.',
      fields: (f) => ({
        effectId: f.id({ required: true, description: 'The effect.' }),
        externalRef: f.string({ required: true, description: 'The executor\'s reference for what it did.' }),
      }),
    }), required: true, description: 'The report.' }) },
    resolve: async (_r, a, ctx) => {
      const e = await completeEffect(ctx.core, actorOf(ctx), { effectId: parseGid('input.effectId', String(a.input.effectId), 'Effect'), externalRef: a.input.externalRef });
      grantRead(ctx, 'Effect', e.id);
      return e;
    },
  }),
  failEffect: t.field({
    type: EffectRef, authScopes: { scope: 'effects:execute' }, description: 'PENDING or EXECUTING to FAILED: the effect did not happen.',
    args: { input: t.arg({ type: builder.inputType('FailEffectInput', {
      description: 'An executor\'s report that the effect did not happen.',
      fields: (f) => ({
        effectId: f.id({ required: true, description: 'The effect.' }),
        reason: f.string({ required: true, description: 'Why.' }),
      }),
    }), required: true, description: 'The report.' }) },
    resolve: async (_r, a, ctx) => {
      const e = await failEffect(ctx.core, actorOf(ctx), { effectId: parseGid('input.effectId', String(a.input.effectId), 'Effect'), reason: a.input.reason });
      grantRead(ctx, 'Effect', e.id);
      return e;
    },
  }),
  confirmReversal: t.field({
    type: ReversalRef, authScopes: { scope: 'effects:execute' },
    description: 'Records a provider\'s confirmation of a reversal; a CONFIRMED reversal counts toward settled. Only the provider\'s own ' +
      'reference confirms it: a reference RETRACT issued is refused BAD_USER_INPUT (field providerRef), see the providerRef rule in docs/guarantees.md.',
    args: { input: t.arg({ type: builder.inputType('ConfirmReversalInput', {
      description: 'A provider\'s confirmation.',
      fields: (f) => ({
        reversalId: f.id({ required: true, description: 'The reversal.' }),
        providerRef: f.string({
          required: true,
          description: 'The provider\'s own reference for the money it moved. Refused when it is, after NFC, trimming whitespace and ' +
            'zero-width characters at both ends and folding A-Z to a-z: any of our global ids (encoded or decoded, e.g. Reversal:12), ' +
            'the id of any row of the fleet, or the idempotency key of any effect or reversal of the fleet (docs/guarantees.md).',
        }),
      }),
    }), required: true, description: 'The confirmation.' }) },
    resolve: async (_r, a, ctx) => {
      const r = await confirmReversal(ctx.core, actorOf(ctx), { reversalId: parseGid('input.reversalId', String(a.input.reversalId), 'Reversal'), providerRef: a.input.providerRef });
      grantRead(ctx, 'Reversal', r.id);
      return r;
    },
  }),
}));
