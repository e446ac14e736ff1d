import { pausePoint } from '../store/pause';
import type { Actor, Core } from '../core';
import { DomainError, badInput, notFound } from '../errors/domain-error';
import { appendEvent } from '../event/event.repository';
import { lockBeliefs, type BeliefRow } from '../belief/belief.repository';
import { recordReversals } from '../reversal/reversal.repository';
import { gid } from '../kernel/ids';
import { Refusal, answerRefusal } from '../kernel/refusal';
import { type Tx, writeTx } from '../store/tx';
import * as v from '../validation';
import {
  type EffectRow,
  effectByKey,
  effectKind,
  insertEffect,
  insertEffectKind,
  insertSupports,
  lockEffect,
  lockNextReady,
  payloadAndSupports,
  reachingRetraction,
  updateEffect,
} from './effect.repository';

/**
 * Registers an effect kind; `reversible` says whether a compensation handler exists. Registering
 * it again the same way is a no-op; changing `reversible` afterwards is refused (CONFLICT), since
 * reversals already recorded were decided by it.
 */
export async function registerEffectKind(core: Core, actor: Actor, input: { kind: string; reversible: boolean }) {
  const kind = v.kind('kind', input.kind);
  if (typeof input.reversible !== 'boolean') throw badInput('reversible', 'must be true or false');
  return writeTx(core.store, actor.fleet, async (tx) => {
    const existing = await effectKind(tx, actor.fleet, kind);
    if (existing) {
      if (existing.reversible === input.reversible) return existing;
      throw new DomainError(
        'CONFLICT',
        `kind: effect kind "${kind}" is already registered with reversible=${existing.reversible}`,
        'kind',
      );
    }
    const row = await insertEffectKind(tx, actor.fleet, kind, input.reversible);
    await appendEvent(tx, { fleet: actor.fleet, type: 'EffectKindRegistered', actorId: actor.agentId, data: row });
    return row;
  });
}

export interface ProposeEffectInput {
  kind: string;
  amount?: { amountMinor: number; currency: string } | null;
  payload?: unknown;
  supportedBy: readonly string[];
  idempotencyKey: string;
}

export type ProposeEffectResult =
  { kind: 'proposed'; effect: EffectRow; created: boolean } | { kind: 'premiseRetracted'; premise: BeliefRow };

/**
 * Writes a PENDING effect after locking every support and checking it is ACTIVE, in one
 * SERIALIZABLE transaction. The caller's idempotency key makes it safe to repeat: a second
 * proposal with the same key and the same kind, amount, currency, payload and supports returns the
 * first effect, whatever happened to it since; the same key with any of them different is a
 * CONFLICT naming the first effect (a key names one effect: Stripe's rule).
 */
export async function proposeEffect(core: Core, actor: Actor, input: ProposeEffectInput): Promise<ProposeEffectResult> {
  const kind = v.kind('kind', input.kind);
  const amount = v.money('amount', input.amount);
  const payload = v.json('payload', input.payload, v.LIMITS.payloadBytesMax);
  const supports = v.ids('supportedBy', input.supportedBy, 1, v.LIMITS.supportsMax);
  const key = v.idempotencyKey('idempotencyKey', input.idempotencyKey);
  return answerRefusal(() =>
    writeTx(core.store, actor.fleet, async (tx) => {
      const known = await effectKind(tx, actor.fleet, kind);
      const effect = known
        ? await insertEffect(tx, { fleet: actor.fleet, kind, amount, payload, key, proposedBy: actor.agentId })
        : undefined;
      if (!effect) {
        const existing = await effectByKey(tx, actor.fleet, key);
        if (!existing) throw badInput('kind', `effect kind "${kind}" is not registered (registerEffectKind first)`);
        const differs = await reuseDiffers(tx, actor.fleet, existing, { kind, amount, payload, supports });
        if (differs.length > 0) {
          const effectId = gid('Effect', existing.id);
          throw new DomainError(
            'CONFLICT',
            `idempotencyKey: "${key}" already names effect ${effectId}, proposed with a different ${differs.join(', ')}; ` +
              'repeat a key only to repeat the same proposal, and use a new key for a new effect',
            'idempotencyKey',
            { effectId },
          );
        }
        return { kind: 'proposed', effect: existing, created: false };
      }
      const rows = await lockBeliefs(tx, actor.fleet, supports, 'share');
      if (rows.length !== supports.length) {
        const missing = supports.find((id) => !rows.some((r) => r.id === id))!;
        throw new DomainError('NOT_FOUND', `supportedBy: belief ${missing} not found`, 'supportedBy');
      }
      const fallen = rows.find((r) => r.status !== 'ACTIVE');
      // Thrown to roll the effect back, caught below.
      if (fallen) throw new Refused({ kind: 'premiseRetracted', premise: fallen });
      await insertSupports(tx, actor.fleet, effect.id, supports);
      await appendEvent(tx, { fleet: actor.fleet, type: 'EffectProposed', actorId: actor.agentId, ids: [effect.id] });
      return { kind: 'proposed', effect, created: true };
    }),
  );
}

/** A proposal that refuses after writing its effect: thrown to roll the transaction back, answered by proposeEffect. */
class Refused extends Refusal<ProposeEffectResult> {}

/** Which of kind, amount, currency, payload and supports a reuse of `existing`'s key changes (payload compared as jsonb). */
async function reuseDiffers(
  tx: Tx,
  fleet: string,
  existing: EffectRow,
  p: {
    kind: string;
    amount: { amountMinor: number; currency: string } | null;
    payload: string | null;
    supports: string[];
  },
): Promise<string[]> {
  const row = await payloadAndSupports(tx, fleet, existing.id, p.payload);
  const given = [...p.supports].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
  const out: string[] = [];
  if (existing.kind !== p.kind) out.push('kind');
  if (
    (existing.amount_minor == null ? null : String(existing.amount_minor)) !==
    (p.amount ? String(p.amount.amountMinor) : null)
  )
    out.push('amount');
  if ((existing.currency ?? null) !== (p.amount?.currency ?? null)) out.push('currency');
  if (!row.samePayload) out.push('payload');
  if (row.supports.join(',') !== given.join(',')) out.push('supportedBy');
  return out;
}

/**
 * Moves the oldest ready PENDING effect (every support ACTIVE) to EXECUTING, skipping rows other
 * executors hold (FOR UPDATE SKIP LOCKED). Null when none is ready. Each support's belief is read by
 * its primary key (as a join, a table without statistics was scanned over the whole fleet for every
 * pending effect, predicate-locking every belief page against concurrent inserts; see lockBeliefs).
 */
export async function claimEffect(
  core: Core,
  actor: Actor,
  input: { kinds?: readonly string[] | null } = {},
): Promise<EffectRow | null> {
  const kinds = input.kinds ? input.kinds.map((k, i) => v.kind(`kinds[${i}]`, k)) : null;
  if (kinds && kinds.length > 64) throw badInput('kinds', 'must name at most 64 kinds');
  return writeTx(core.store, actor.fleet, async (tx) => {
    const id = await lockNextReady(tx, actor.fleet, kinds);
    if (!id) return null;
    await pausePoint('claimEffect:locked');
    const effect = await updateEffect(tx, actor.fleet, id, {
      status: 'EXECUTING',
      claimed_by: actor.agentId,
      claimed_at: new Date(),
    });
    await appendEvent(tx, { fleet: actor.fleet, type: 'EffectClaimed', actorId: actor.agentId, ids: [id] });
    return effect;
  });
}

/**
 * EXECUTING → EXECUTED with the executor's reference. If a support was retracted while it ran (the
 * retraction marked it reached), its reversal is recorded in this same transaction, so no effect
 * falls between the states. Repeating the call with the same reference returns the effect unchanged.
 */
export async function completeEffect(
  core: Core,
  actor: Actor,
  input: { effectId: string; externalRef: string },
): Promise<EffectRow> {
  const effectId = v.id('effectId', input.effectId);
  const ref = v.text('externalRef', input.externalRef, v.LIMITS.providerRefMax);
  return writeTx(core.store, actor.fleet, async (tx) => {
    const e = await lockEffect(tx, actor.fleet, effectId);
    if (!e) throw notFound('effect', effectId, 'effectId');
    await pausePoint('completeEffect:locked');
    if (e.status === 'EXECUTED' && e.external_ref === ref) return e;
    if (e.status !== 'EXECUTING')
      throw new DomainError('CONFLICT', `effectId: effect ${effectId} is ${e.status}, not EXECUTING`, 'effectId');
    const done = await updateEffect(tx, actor.fleet, effectId, {
      status: 'EXECUTED',
      external_ref: ref,
      executed_at: new Date(),
    });
    await appendEvent(tx, { fleet: actor.fleet, type: 'EffectExecuted', actorId: actor.agentId, ids: [effectId] });
    // Which retraction reached it: the one that marked it, else (defensively) the first that took a support down.
    const rid = await reachingRetraction(tx, actor.fleet, e);
    if (rid) await recordReversals(tx, actor.fleet, rid, actor.agentId, { effectId });
    return done;
  });
}

/** PENDING or EXECUTING → FAILED with the executor's reason. A failed effect never ran, so it owes nothing. */
export async function failEffect(
  core: Core,
  actor: Actor,
  input: { effectId: string; reason: string },
): Promise<EffectRow> {
  const effectId = v.id('effectId', input.effectId);
  const reason = v.text('reason', input.reason, v.LIMITS.reasonMax, { multiline: true });
  return writeTx(core.store, actor.fleet, async (tx) => {
    const e = await lockEffect(tx, actor.fleet, effectId);
    if (!e) throw notFound('effect', effectId, 'effectId');
    if (e.status === 'FAILED') return e;
    if (e.status !== 'EXECUTING' && e.status !== 'PENDING') {
      throw new DomainError(
        'CONFLICT',
        `effectId: effect ${effectId} is ${e.status}; only PENDING or EXECUTING effects can fail`,
        'effectId',
      );
    }
    const failed = await updateEffect(tx, actor.fleet, effectId, {
      status: 'FAILED',
      failure_reason: reason,
      failed_at: new Date(),
    });
    await appendEvent(tx, {
      fleet: actor.fleet,
      type: 'EffectFailed',
      actorId: actor.agentId,
      ids: [effectId],
      data: { reason },
    });
    return failed;
  });
}
