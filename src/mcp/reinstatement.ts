import { z } from 'zod';
import { gid } from '../kernel/ids';
import { badInput, DomainError, notFound } from '../errors/domain-error';
import { reinstatementPage, reinstatementTotals, reinstatementsByIds } from '../reinstatement/reinstatement.repository';
import { moneyLines } from '../reversal/money-line.repository';
import type { Tx } from '../store/tx';
import { money, parseAnyId } from './receipts';
import { Money, anyId } from './schemas';

/**
 * get_reinstatement: the receipt of a reinstatement (a retraction taken back), read through the
 * reader path like get_receipt. The beliefs it brought back are ACTIVE again, so their ids are
 * shown only to a token that may read ACTIVE beliefs (beliefs:read); the count always.
 */

export const getReinstatementInput = {
  reinstatementId: anyId('The reinstatement').optional(),
  retractionId: anyId('Instead: the retraction it took back').optional(),
};

const Line = z.object({
  reversalId: z.string().nullable(),
  effectId: z.string().nullable(),
  line: z
    .enum(['VOIDED', 'IN_FLIGHT', 'REEXECUTION_OWED'])
    .describe(
      "VOIDED: no longer owed; IN_FLIGHT: the provider's answer decides; REEXECUTION_OWED: the money came back and is owed again",
    ),
  priorStatus: z.enum(['OWED', 'DISPATCHED', 'CONFIRMED', 'FAILED', 'UNREACHABLE']),
  amount: Money.nullable(),
  reexecutionKey: z.string().nullable().describe('reexecution: + the reversal key, for REEXECUTION_OWED'),
  outcome: z.string().nullable(),
});

export const getReinstatementOutput = {
  reinstatement: z.object({
    id: z.string(),
    dbId: z.string(),
    status: z.enum(['REINSTATED', 'BLOCKED']),
    reason: z.string(),
    createdAt: z.string(),
    completedAt: z.string().nullable(),
    retractionId: z.string().nullable(),
    contradictionId: z.string().nullable(),
  }),
  beliefs: z.object({
    totalCount: z.number().int(),
    items: z
      .array(z.object({ id: z.string(), depth: z.number().int() }))
      .describe(
        'Root first, in reverse-cascade order; only those the token may read (an ACTIVE belief needs beliefs:read)',
      ),
  }),
  moneyLines: z.array(Line),
  restorableEffectIds: z.array(z.string()),
  contradictionIds: z.array(z.string()),
  totals: z.object({
    beliefsReinstated: z.number().int(),
    contradictionsRaised: z.number().int(),
    reversalsVoided: z.number().int(),
    reversalsInFlight: z.number().int(),
    reexecutionsOwed: z.number().int(),
    effectsRestorable: z.number().int(),
    effectsRestored: z.number().int(),
    voided: z.array(Money),
    inFlight: z.array(Money),
    reexecutionOwed: z.array(Money),
  }),
};

type Out<S extends Record<string, z.ZodType>> = { [K in keyof S]: z.infer<S[K]> };
export type ReinstatementOut = Out<typeof getReinstatementOutput>;

export async function getReinstatement(
  tx: Tx,
  fleet: string,
  args: { reinstatementId?: string; retractionId?: string },
): Promise<ReinstatementOut> {
  if (args.reinstatementId && args.retractionId)
    throw badInput('retractionId', 'give reinstatementId or retractionId, not both');
  let row;
  if (args.reinstatementId) {
    const id = parseAnyId('reinstatementId', args.reinstatementId, 'Reinstatement');
    [row] = await reinstatementsByIds(tx, fleet, [id]);
    if (!row) throw notFound('reinstatement', id, 'reinstatementId');
  } else {
    const retractionId = args.retractionId ? parseAnyId('retractionId', args.retractionId, 'Retraction') : undefined;
    [row] = await reinstatementPage(tx, fleet, { retractionId, first: 1, before: null });
    if (!row)
      throw new DomainError(
        'NOT_FOUND',
        retractionId
          ? `retractionId: retraction ${retractionId} was never reinstated`
          : `fleet ${fleet} has no reinstatements yet`,
        retractionId ? 'retractionId' : undefined,
      );
  }
  const totals = await reinstatementTotals(tx, fleet, row.id);
  const monies = (xs: Array<{ amountMinor: string; currency: string }>) =>
    xs.map((m) => money(m.amountMinor, m.currency));
  return {
    reinstatement: {
      id: gid('Reinstatement', row.id),
      dbId: row.id,
      status: row.status,
      reason: row.reason,
      createdAt: row.created_at.toISOString(),
      completedAt: row.completed_at ? row.completed_at.toISOString() : null,
      retractionId: gid('Retraction', row.retraction_id),
      contradictionId: row.contradiction_id ? gid('Contradiction', row.contradiction_id) : null,
    },
    beliefs: {
      totalCount: row.belief_ids.length,
      items: row.belief_ids.map((id, i) => ({ id: gid('Belief', id), depth: row.belief_depths[i]! })),
    },
    moneyLines: (await moneyLines(tx, fleet, row.id)).map((l) => ({
      reversalId: gid('Reversal', l.reversal_id),
      effectId: gid('Effect', l.effect_id),
      line: l.line,
      priorStatus: l.prior_status,
      amount: l.amount_minor === null || l.currency === null ? null : money(l.amount_minor, l.currency),
      reexecutionKey: l.reexecution_key,
      outcome: l.outcome,
    })),
    restorableEffectIds: row.restorable_effect_ids.map((id) => gid('Effect', id)),
    contradictionIds: row.contradiction_ids.map((id) => gid('Contradiction', id)),
    totals: {
      ...totals,
      voided: monies(totals.voided),
      inFlight: monies(totals.inFlight),
      reexecutionOwed: monies(totals.reexecutionOwed),
    },
  };
}

export function reinstatementText(r: ReinstatementOut): string {
  const t = r.totals;
  const sum = (xs: Array<{ formatted: string }>) => (xs.length ? xs.map((m) => m.formatted).join(' + ') : '0');
  return [
    `Reinstatement ${r.reinstatement.id} [${r.reinstatement.status}] of retraction ${r.reinstatement.retractionId ?? '(needs receipts:read)'} at ${r.reinstatement.createdAt}`,
    `Reason: ${r.reinstatement.reason}`,
    ...(r.reinstatement.contradictionId
      ? [`Blocked by contradiction ${r.reinstatement.contradictionId}: the root's claim holds another ACTIVE belief`]
      : []),
    `Beliefs reinstated: ${t.beliefsReinstated}${r.beliefs.items.length < t.beliefsReinstated ? ` (${r.beliefs.items.length} shown: the others need beliefs:read)` : ''}`,
    ...r.beliefs.items.map((b) => `  depth ${b.depth}: ${b.id}`),
    `Money lines (${r.moneyLines.length}):`,
    ...r.moneyLines.map(
      (l) =>
        `  ${l.line} (was ${l.priorStatus}) ${l.amount ? l.amount.formatted : 'no amount'} reversal ${l.reversalId ?? '(needs receipts:read)'}${l.reexecutionKey ? ` key ${l.reexecutionKey}` : ''}`,
    ),
    `Restorable effects (${r.restorableEffectIds.length}): ${r.restorableEffectIds.join(', ') || 'none'}`,
    `Totals: voided ${sum(t.voided)} | in flight ${sum(t.inFlight)} | re-execution owed ${sum(t.reexecutionOwed)} | ${t.effectsRestored} of ${t.effectsRestorable} restorable effects restored`,
  ].join('\n');
}
