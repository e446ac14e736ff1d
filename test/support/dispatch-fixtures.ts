import { sql } from 'kysely';
import type { Actor, Core } from '../../src/core';
import { claimEffect, completeEffect, proposeEffect, registerEffectKind } from '../../src/effect/effect.service';
import { retractBelief } from '../../src/retraction/retraction.service';
import { totalsFor } from '../../src/retraction/retraction.repository';
import { HttpReversalProvider, type HttpReversalProviderOptions } from '../../src/reversal/provider';
import type { Store } from '../../src/store/engine';
import { inTx } from '../../src/store/tx';
import { belief } from './story';
import type { FakeProvider } from './fake-provider';

export interface OwedReversal {
  id: string;
  key: string;
  effectId: string;
  amountMinor: number;
}

/**
 * `n` executed refunds resting on one premise, then the premise retracted: `n` OWED reversals in the actor's fleet,
 * amounts `amount(i)` (default 1000 + 7i minor units, USD).
 */
export async function owedReversals(
  core: Core,
  actor: Actor,
  n: number,
  opts: { prefix?: string; amount?: (i: number) => number } = {},
): Promise<{ retractionId: string; reversals: OwedReversal[] }> {
  const prefix = opts.prefix ?? `batch-${Math.random().toString(36).slice(2, 8)}`;
  const amount = opts.amount ?? ((i: number) => 1000 + 7 * i);
  await registerEffectKind(core, actor, { kind: 'refund', reversible: true });
  const premise = await belief(core, actor, `${prefix}/premise`);
  const effects: Array<{ id: string; key: string; amountMinor: number }> = [];
  for (let i = 0; i < n; i++) {
    const key = `${prefix}:refund-${i}`;
    const r = await proposeEffect(core, actor, {
      kind: 'refund',
      supportedBy: [premise.id],
      idempotencyKey: key,
      amount: { amountMinor: amount(i), currency: 'USD' },
      payload: { customer: `${prefix}/customer-${i}`, n: i },
    });
    if (r.kind !== 'proposed') throw new Error('premise fell');
    const claimed = await claimEffect(core, actor, { kinds: ['refund'] });
    if (claimed?.id !== r.effect.id) throw new Error(`claimed ${claimed?.id}, expected ${r.effect.id}`);
    await completeEffect(core, actor, { effectId: r.effect.id, externalRef: `bank-${prefix}-${i}` });
    effects.push({ id: r.effect.id, key, amountMinor: amount(i) });
  }
  const { retractionId } = await retractBelief(core, actor, { beliefId: premise.id, reason: 'the premise was false' });
  const rows = await inTx(core.store, { fleet: actor.fleet, readOnly: true }, (tx) =>
    tx
      .selectFrom('reversals')
      .select(['id', 'idempotency_key', 'effect_id', 'status'])
      .where('retraction_id', '=', retractionId)
      .orderBy('id')
      .execute(),
  );
  if (rows.length !== n || rows.some((r) => r.status !== 'OWED')) throw new Error('expected every reversal OWED');
  return {
    retractionId,
    reversals: rows.map((r) => ({
      id: r.id,
      key: r.idempotency_key,
      effectId: r.effect_id,
      amountMinor: effects.find((e) => e.id === r.effect_id)!.amountMinor,
    })),
  };
}

export interface ReversalState {
  id: string;
  fleet_id: string;
  status: string;
  idempotency_key: string;
  provider_ref: string | null;
  attempts: number;
  reason: string | null;
  last_error: string | null;
  lease_holder: string | null;
  amount_minor: string | null;
}

/** Every reversal in the store, across fleets (the test connection owns the tables and bypasses row security). */
export async function allReversals(store: Store): Promise<ReversalState[]> {
  const r = await sql<ReversalState>`
    SELECT id::text AS id, fleet_id, status, idempotency_key, provider_ref, attempts, reason, last_error, lease_holder,
           amount_minor::text AS amount_minor
      FROM reversals ORDER BY reversals.id`.execute(store.db);
  return r.rows;
}

export async function reversalState(store: Store, id: string): Promise<ReversalState> {
  const all = await allReversals(store);
  const r = all.find((x) => x.id === id);
  if (!r) throw new Error(`no reversal ${id}`);
  return r;
}

/** Events of `type` naming reversal `id`, across fleets. */
export async function eventsFor(
  store: Store,
  id: string,
  type?: string,
): Promise<Array<{ type: string; data: unknown }>> {
  const r = await sql<{ type: string; data: unknown }>`
    SELECT type, data FROM events WHERE ${id}::bigint = ANY(ids) AND type LIKE 'Reversal%'
       ${type ? sql`AND type = ${type}` : sql``}
     ORDER BY tx, seq`.execute(store.db);
  return r.rows;
}

/** Settled (minor units) per retraction, summed, read through totalsFor in each retraction's fleet. */
export async function settledMinor(
  store: Store,
  retractions: Array<{ fleet: string; retractionId: string }>,
): Promise<number> {
  let sum = 0;
  for (const { fleet, retractionId } of retractions) {
    const t = await inTx(store, { fleet, readOnly: true }, (tx) => totalsFor(tx, fleet, retractionId));
    sum += t.settled.reduce((n, m) => n + Number(m.amountMinor), 0);
  }
  return sum;
}

/** The real HTTP adapter pointed at the fake, with fast retries (and a per-attempt deadline generous enough for a loaded CI host). */
export function fastProvider(
  fake: FakeProvider,
  opts: Partial<HttpReversalProviderOptions> = {},
): HttpReversalProvider {
  return new HttpReversalProvider({
    url: fake.url,
    timeoutMs: 2000,
    maxAttempts: 4,
    baseDelayMs: 5,
    maxDelayMs: 20,
    ...opts,
  });
}

/** Polls `check` every 25 ms until it returns true, or fails after `ms`. */
export async function eventually(check: () => Promise<boolean>, ms = 15_000, what = 'condition'): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Requests the fake received, grouped by the reversal id in their body: which keys each reversal was sent under. */
export function keysByReversal(fake: FakeProvider): Map<string, Set<string | null>> {
  const out = new Map<string, Set<string | null>>();
  for (const req of fake.requests) {
    const id = String((req.body as { reversalId?: unknown } | null)?.reversalId);
    const s = out.get(id) ?? new Set<string | null>();
    s.add(req.key);
    out.set(id, s);
  }
  return out;
}
