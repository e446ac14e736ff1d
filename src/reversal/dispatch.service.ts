import type { Actor, Core } from '../core';
import { DomainError, badInput, notFound } from '../errors/domain-error';
import { appendEvent } from '../event/event.repository';
import { type Tx, inTx, readTx, writeTx } from '../store/tx';
import * as v from '../validation';
import type { ProviderOutcome } from './provider/provider';
import { MAX_REASON_CHARS, MAX_REFERENCE_CHARS } from './provider/http';
import { assertProvidersOwnRef } from './provider-ref';
import { recordWatchedOutcome } from './money-line.repository';
import { confirmLocked } from './reversal.service';
import {
  type ReversalRow,
  dispatchFleets,
  lockReversal,
  stuckReversalRows,
  takeDispatchable,
  updateReversal,
} from './reversal.repository';

/** A dispatch lease: who took the reversal and which take it was (the `attempts` count after that take). */
export interface Lease {
  holder: string;
  attempt: number;
}

/** A reversal as a dispatcher holds it: the row, its lease, and what the provider needs about its effect. */
export interface DispatchItem {
  id: string;
  fleetId: string;
  effectId: string;
  retractionId: string;
  idempotencyKey: string;
  amount: { amountMinor: number; currency: string } | null;
  attempts: number;
  leaseExpiresAt: Date;
  dispatchedAt: Date;
  lease: Lease;
  effect: { kind: string; externalRef: string | null; payload: unknown };
}

/** Per-fleet counts from retract_dispatch_fleets. */
export interface FleetBacklog {
  fleetId: string;
  ready: number;
  stuck: number;
}

/** What happened to an outcome handed to the store. */
export type RecordResult =
  | { applied: true; status: 'CONFIRMED' | 'FAILED' | 'DISPATCHED'; reversal: ReversalRow }
  /** Already CONFIRMED under this very reference: nothing changed (a replayed outcome). */
  | { applied: false; why: 'duplicate'; reversal: ReversalRow }
  /** The lease was taken over (or the reversal settled) since this take: the outcome is not the latest word. */
  | { applied: false; why: 'stale-lease'; reversal: ReversalRow };

/**
 * Who acts on reversals: an agent (its fleet, and its id on the events), or a bare fleet id for the dispatcher,
 * which is no agent (its events carry no actor; the lease holder is in their data).
 */
export type DispatchScope = Actor | string;

/** How long after the first dispatch a reversal may still be re-sent. Must stay below the provider's key retention. */
export const DEFAULT_RESEND_WINDOW_MS = 6 * 60 * 60 * 1000;
/** Largest take per call. */
const MAX_TAKE = 500;

function scopeOf(scope: DispatchScope): { fleet: string; actorId: string | null } {
  if (typeof scope === 'string') return { fleet: v.text('fleet', scope, 64), actorId: null };
  return { fleet: v.text('fleet', scope.fleet, 64), actorId: v.id('agentId', scope.agentId) };
}

function positiveInt(field: string, n: unknown, max: number): number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > max)
    throw badInput(field, `must be an integer from 1 to ${max}`);
  return n;
}

function holderOf(h: unknown): string {
  return v.text('holder', h, 200);
}

export interface TakeOptions {
  /** At most this many reversals (1…MAX_TAKE). */
  limit: number;
  /** Lease length; an unrecorded reversal becomes takeable again this long after the take. */
  leaseMs: number;
  /** Names the taker; outcomes must present it with the take's attempt number. */
  holder: string;
  /** Re-sends happen only while now() − first dispatch < this. Default {@link DEFAULT_RESEND_WINDOW_MS}. */
  resendWindowMs?: number;
}

/**
 * Takes up to `limit` of the fleet's reversals that are OWED, or DISPATCHED with an expired lease (first dispatched
 * inside the resend window), oldest first, in one short SERIALIZABLE transaction with `FOR UPDATE SKIP LOCKED`:
 * concurrent dispatchers never take the same reversal under live leases. Each returned reversal is DISPATCHED with
 * `lease_expires_at = now() + leaseMs`, `attempts + 1` and a ReversalDispatched event, and carries its lease
 * (holder + attempt) and its effect's kind, external reference, amount and payload. A reversal keeps its one
 * idempotency key across every take.
 */
export async function takeOwedReversals(core: Core, scope: DispatchScope, opts: TakeOptions): Promise<DispatchItem[]> {
  const { fleet, actorId } = scopeOf(scope);
  const limit = positiveInt('limit', opts.limit, MAX_TAKE);
  const leaseMs = positiveInt('leaseMs', opts.leaseMs, 7 * 24 * 3600 * 1000);
  const holder = holderOf(opts.holder);
  const resendWindowMs = positiveInt(
    'resendWindowMs',
    opts.resendWindowMs ?? DEFAULT_RESEND_WINDOW_MS,
    365 * 24 * 3600 * 1000,
  );
  return writeTx(core.store, fleet, async (tx) => {
    const rows = await takeDispatchable(tx, fleet, { limit, leaseMs, holder, resendWindowMs });
    // One ReversalDispatched event row per retraction records the take.
    const byRetraction = new Map<string, string[]>();
    for (const row of rows)
      byRetraction.set(row.retraction_id, [...(byRetraction.get(row.retraction_id) ?? []), row.id]);
    for (const [retractionId, ids] of byRetraction) {
      await appendEvent(tx, {
        fleet,
        type: 'ReversalDispatched',
        actorId,
        retractionId,
        ids,
        data: { holder, leaseMs },
      });
    }
    return rows.map((row) => ({
      id: row.id,
      fleetId: fleet,
      effectId: row.effect_id,
      retractionId: row.retraction_id,
      idempotencyKey: row.idempotency_key,
      amount:
        row.amount_minor !== null && row.currency !== null
          ? { amountMinor: Number(row.amount_minor), currency: row.currency }
          : null,
      attempts: row.attempts,
      leaseExpiresAt: row.lease_expires_at,
      dispatchedAt: row.dispatched_at,
      lease: { holder, attempt: row.attempts },
      effect: { kind: row.kind, externalRef: row.external_ref, payload: row.payload },
    }));
  });
}

/**
 * Records what the provider said about one send, in one SERIALIZABLE transaction:
 * - `confirmed`: CONFIRMED with the provider's reference (confirmReversal semantics). Accepted from any send, even a
 *   late one whose lease was taken over, since the money moved; the same reference again is a no-op (`duplicate`);
 *   a different reference for an already CONFIRMED reversal is a CONFLICT (the provider paid under two references:
 *   reconcile by hand).
 * - `failed`: FAILED with the reason and a ReversalFailed event — only under the current lease.
 * - `retry_later`: stays DISPATCHED (the lease runs out and the reversal is re-sent under the same key); the reason is
 *   kept in `last_error` — only under the current lease.
 * Under a lease that is no longer current (another take happened, or the reversal settled) `failed` and
 * `retry_later` change nothing and return `stale-lease`. A reference is never generated here: only the provider's.
 */
export async function recordOutcome(
  core: Core,
  scope: DispatchScope,
  reversalId: string,
  outcome: ProviderOutcome,
  lease: Lease,
): Promise<RecordResult> {
  const { fleet, actorId } = scopeOf(scope);
  const id = v.id('reversalId', reversalId);
  const fence: Lease = {
    holder: holderOf(lease?.holder),
    attempt: positiveInt('lease.attempt', lease?.attempt, 2 ** 31 - 1),
  };
  switch (outcome?.outcome) {
    case 'confirmed': {
      const ref = v.providerRef('providerRef', outcome.providerRef, MAX_REFERENCE_CHARS);
      return writeTx(core.store, fleet, (tx) => confirmInTx(tx, fleet, actorId, id, ref, `dispatcher:${fence.holder}`));
    }
    case 'failed': {
      const reason = clip(outcome.reason) || 'provider refused the reversal (no reason given)';
      return writeTx(core.store, fleet, (tx) => failInTx(tx, fleet, actorId, id, fence, reason));
    }
    case 'retry_later': {
      const reason = clip(outcome.reason) || 'inconclusive provider answer';
      // Inconclusive: the reversal stays DISPATCHED (its lease runs out and it is re-sent under the same key); only
      // `last_error` is noted, fenced like a failure. No state changes, so no event.
      return writeTx(core.store, fleet, async (tx) => {
        const u = await setUnderLease(tx, fleet, id, fence, { last_error: reason });
        return 'stale' in u ? u.stale : { applied: true, status: 'DISPATCHED', reversal: u.done };
      });
    }
    default:
      throw badInput('outcome', 'must be confirmed, failed or retry_later');
  }
}

/**
 * Confirms a reversal from a provider's own report (a signed callback), with confirmReversal semantics, whatever
 * its dispatch state: OWED, DISPATCHED or FAILED become CONFIRMED; the same reference again is a no-op.
 */
export async function confirmFromProvider(
  core: Core,
  scope: DispatchScope,
  reversalId: string,
  providerRef: string,
  via = 'callback',
): Promise<RecordResult> {
  const { fleet, actorId } = scopeOf(scope);
  const id = v.id('reversalId', reversalId);
  const ref = v.providerRef('providerRef', providerRef, MAX_REFERENCE_CHARS);
  return writeTx(core.store, fleet, (tx) => confirmInTx(tx, fleet, actorId, id, ref, via));
}

/**
 * The fleets that have reversals to send (and how many are stuck past the resend window), read across fleets through
 * the narrow SECURITY DEFINER function retract_dispatch_fleets; the work itself is then done per fleet under RLS.
 */
export async function dispatchableFleets(core: Core, opts: { resendWindowMs?: number } = {}): Promise<FleetBacklog[]> {
  const resendWindowMs = positiveInt(
    'resendWindowMs',
    opts.resendWindowMs ?? DEFAULT_RESEND_WINDOW_MS,
    365 * 24 * 3600 * 1000,
  );
  return inTx(core.store, { fleet: null, readOnly: true }, (tx) => dispatchFleets(tx, resendWindowMs));
}

/**
 * DISPATCHED reversals whose lease expired after the resend window closed: the dispatcher will not re-send them
 * (the provider may have forgotten the key, and a re-send could pay twice). An operator confirms them with the
 * provider's reference, or settles them by hand.
 */
export async function stuckReversals(
  core: Core,
  scope: DispatchScope,
  opts: { resendWindowMs?: number; limit?: number } = {},
): Promise<ReversalRow[]> {
  const { fleet } = scopeOf(scope);
  const resendWindowMs = positiveInt(
    'resendWindowMs',
    opts.resendWindowMs ?? DEFAULT_RESEND_WINDOW_MS,
    365 * 24 * 3600 * 1000,
  );
  const limit = positiveInt('limit', opts.limit ?? 100, MAX_TAKE);
  return readTx(core.store, fleet, (tx) => stuckReversalRows(tx, fleet, resendWindowMs, limit));
}

function clip(reason: unknown): string {
  const s = typeof reason === 'string' ? reason.replace(/\u0000/g, '').trim() : '';
  return s.length <= MAX_REASON_CHARS ? s : `${s.slice(0, MAX_REASON_CHARS - 1)}…`;
}

/**
 * CONFIRMED with the provider's reference, with the semantics of confirmReversal: the same reference again is a
 * no-op; a different reference for a CONFIRMED reversal, or any for an UNREACHABLE one, is a CONFLICT; a reference
 * RETRACT issued is refused (src/reversal/provider-ref.ts). Accepted from any send whatever its lease (the money
 * moved), including over FAILED. `via` says who reported it (the event's data).
 */
async function confirmInTx(
  tx: Tx,
  fleet: string,
  actorId: string | null,
  reversalId: string,
  providerRef: string,
  via: string,
): Promise<RecordResult> {
  const r = await lockReversal(tx, fleet, reversalId);
  if (!r) throw notFound('reversal', reversalId);
  if (r.status === 'CONFIRMED') {
    if (r.provider_ref === providerRef) return { applied: false, why: 'duplicate', reversal: r };
    throw new DomainError(
      'CONFLICT',
      `reversalId: reversal ${reversalId} is already confirmed under another provider reference; the provider may have paid twice — reconcile with the provider`,
      'reversalId',
    );
  }
  const done = await confirmLocked(tx, fleet, actorId, r, providerRef, {
    refuseIssued: () => assertProvidersOwnRef(tx, fleet, providerRef),
    data: { providerRef, via, previousStatus: r.status },
  });
  return { applied: true, status: 'CONFIRMED', reversal: done };
}

/** The reversal locked, when it is still DISPATCHED under exactly this lease (same holder, same take); else the stale-lease answer. */
async function lockUnderLease(
  tx: Tx,
  fleet: string,
  reversalId: string,
  lease: Lease,
): Promise<{ held: ReversalRow } | { stale: RecordResult }> {
  const r = await lockReversal(tx, fleet, reversalId);
  if (!r) throw notFound('reversal', reversalId);
  const holds = r.status === 'DISPATCHED' && r.attempts === lease.attempt && r.lease_holder === lease.holder;
  return holds ? { held: r } : { stale: { applied: false, why: 'stale-lease', reversal: r } };
}

/**
 * The reversal's columns set under its lease, fenced: when the lease was taken over (or the reversal settled) since
 * this take, the stale-lease answer and nothing changes.
 */
async function setUnderLease(
  tx: Tx,
  fleet: string,
  reversalId: string,
  lease: Lease,
  set: Parameters<typeof updateReversal>[3],
): Promise<{ held: ReversalRow; done: ReversalRow } | { stale: RecordResult }> {
  const l = await lockUnderLease(tx, fleet, reversalId, lease);
  return 'stale' in l ? l : { held: l.held, done: await updateReversal(tx, fleet, reversalId, set) };
}

/** FAILED with the provider's reason, fenced: a late worker whose lease was taken over gets `stale-lease` and changes nothing. */
async function failInTx(
  tx: Tx,
  fleet: string,
  actorId: string | null,
  reversalId: string,
  lease: Lease,
  reason: string,
): Promise<RecordResult> {
  const set = { status: 'FAILED' as const, reason, last_error: reason, failed_at: new Date(), lease_expires_at: null };
  const u = await setUnderLease(tx, fleet, reversalId, lease, set);
  if ('stale' in u) return u.stale;
  await appendEvent(tx, {
    fleet,
    type: 'ReversalFailed',
    actorId,
    retractionId: u.held.retraction_id,
    ids: [reversalId],
    data: { reason, holder: lease.holder, attempt: lease.attempt },
  });
  await recordWatchedOutcome(tx, fleet, actorId, u.held, 'FAILED');
  return { applied: true, status: 'FAILED', reversal: u.done };
}
