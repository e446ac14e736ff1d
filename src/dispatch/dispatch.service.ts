import type { Actor, Core } from '../core';
import { badInput } from '../errors/domain-error';
import { inTx, readTx, writeTx } from '../store/tx';
import * as v from '../validation';
import type { ProviderOutcome } from './provider/provider';
import { MAX_REASON_CHARS, MAX_REFERENCE_CHARS } from './provider/http';
import {
  type DispatchItem,
  type DispatchRow,
  type FleetBacklog,
  type Lease,
  type RecordResult,
  confirmInTx,
  dispatchFleets,
  failInTx,
  retryLaterInTx,
  stuckInTx,
  takeInTx,
} from './dispatch.repository';

export type { DispatchItem, DispatchRow, FleetBacklog, Lease, RecordResult } from './dispatch.repository';

/**
 * Who acts on reversals: an agent (its fleet, and its id on the events), or a bare fleet id for the dispatcher,
 * which is no agent (its events carry no actor; the lease holder is in their data).
 */
export type DispatchScope = Actor | string;

/** How long after the first dispatch a reversal may still be re-sent. Must stay below the provider's key retention. */
export const DEFAULT_RESEND_WINDOW_MS = 6 * 60 * 60 * 1000;
/** Largest take per call. */
export const MAX_TAKE = 500;

function scopeOf(scope: DispatchScope): { fleet: string; actorId: string | null } {
  if (typeof scope === 'string') return { fleet: v.text('fleet', scope, 64), actorId: null };
  return { fleet: v.text('fleet', scope.fleet, 64), actorId: v.id('agentId', scope.agentId) };
}

function positiveInt(field: string, n: unknown, max: number): number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > max) throw badInput(field, `must be an integer from 1 to ${max}`);
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
  const resendWindowMs = positiveInt('resendWindowMs', opts.resendWindowMs ?? DEFAULT_RESEND_WINDOW_MS, 365 * 24 * 3600 * 1000);
  return writeTx(core.store, fleet, (tx) => takeInTx(tx, fleet, actorId, { limit, leaseMs, holder, resendWindowMs }));
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
  const fence: Lease = { holder: holderOf(lease?.holder), attempt: positiveInt('lease.attempt', lease?.attempt, 2 ** 31 - 1) };
  switch (outcome?.outcome) {
    case 'confirmed': {
      const ref = v.text('providerRef', outcome.providerRef, MAX_REFERENCE_CHARS);
      return writeTx(core.store, fleet, (tx) => confirmInTx(tx, fleet, actorId, id, ref, `dispatcher:${fence.holder}`));
    }
    case 'failed': {
      const reason = clip(outcome.reason) || 'provider refused the reversal (no reason given)';
      return writeTx(core.store, fleet, (tx) => failInTx(tx, fleet, actorId, id, fence, reason));
    }
    case 'retry_later': {
      const reason = clip(outcome.reason) || 'inconclusive provider answer';
      return writeTx(core.store, fleet, (tx) => retryLaterInTx(tx, id, fence, reason));
    }
    default:
      throw badInput('outcome', 'must be confirmed, failed or retry_later');
  }
}

/**
 * Confirms a reversal from a provider's own report (a signed callback), with confirmReversal semantics, whatever
 * its dispatch state: OWED, DISPATCHED or FAILED become CONFIRMED; the same reference again is a no-op.
 */
export async function confirmFromProvider(core: Core, scope: DispatchScope, reversalId: string, providerRef: string, via = 'callback'): Promise<RecordResult> {
  const { fleet, actorId } = scopeOf(scope);
  const id = v.id('reversalId', reversalId);
  const ref = v.text('providerRef', providerRef, MAX_REFERENCE_CHARS);
  return writeTx(core.store, fleet, (tx) => confirmInTx(tx, fleet, actorId, id, ref, via));
}

/**
 * The fleets that have reversals to send (and how many are stuck past the resend window), read across fleets through
 * the narrow SECURITY DEFINER function retract_dispatch_fleets; the work itself is then done per fleet under RLS.
 */
export async function dispatchableFleets(core: Core, opts: { resendWindowMs?: number } = {}): Promise<FleetBacklog[]> {
  const resendWindowMs = positiveInt('resendWindowMs', opts.resendWindowMs ?? DEFAULT_RESEND_WINDOW_MS, 365 * 24 * 3600 * 1000);
  return inTx(core.store, { fleet: null, readOnly: true }, (tx) => dispatchFleets(tx, resendWindowMs));
}

/**
 * DISPATCHED reversals whose lease expired after the resend window closed: the dispatcher will not re-send them
 * (the provider may have forgotten the key, and a re-send could pay twice). An operator confirms them with the
 * provider's reference, or settles them by hand.
 */
export async function stuckReversals(core: Core, scope: DispatchScope, opts: { resendWindowMs?: number; limit?: number } = {}): Promise<DispatchRow[]> {
  const { fleet } = scopeOf(scope);
  const resendWindowMs = positiveInt('resendWindowMs', opts.resendWindowMs ?? DEFAULT_RESEND_WINDOW_MS, 365 * 24 * 3600 * 1000);
  const limit = positiveInt('limit', opts.limit ?? 100, MAX_TAKE);
  return readTx(core.store, fleet, (tx) => stuckInTx(tx, fleet, resendWindowMs, limit));
}

function clip(reason: unknown): string {
  const s = typeof reason === 'string' ? reason.replace(/\u0000/g, '').trim() : '';
  return s.length <= MAX_REASON_CHARS ? s : `${s.slice(0, MAX_REASON_CHARS - 1)}…`;
}
