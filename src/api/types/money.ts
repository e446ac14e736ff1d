import type { Money, Totals } from '../../retraction/retraction.repository';
import { builder, readRule } from '../builder';

export const MoneyRef = builder.objectRef<Money>('Money').implement({
  description: 'An amount in integer minor units (cents) and its ISO 4217 currency.',
  fields: (t) => ({
    amountMinor: t.field({ type: 'SafeInt', description: 'Integer minor units, e.g. 124000 for $1,240.00.', resolve: (m) => m.amountMinor }),
    currency: t.exposeString('currency', { description: 'Three capital letters, e.g. USD.' }),
  }),
});

export const MoneyInput = builder.inputType('MoneyInput', {
  description: 'An amount in integer minor units and its currency.',
  fields: (t) => ({
    amountMinor: t.field({ type: 'SafeInt', required: true, description: 'Positive integer minor units.' }),
    currency: t.string({ required: true, description: 'Three capital letters (ISO 4217).' }),
  }),
});

/** Money from a row's amount_minor/currency columns; null when the row carries no money. */
export function moneyOf(row: { amount_minor: unknown; currency: unknown }): Money | null {
  return row.amount_minor == null || row.currency == null ? null : { amountMinor: Number(row.amount_minor), currency: String(row.currency) };
}

/** A retraction's totals carry its id, so the grant of a retraction this request made covers them. */
export const TotalsRef = builder.objectRef<Totals & { retractionId?: string }>('RetractionTotals').implement({
  description: 'The figures of a receipt, computed from the rows themselves. Needs receipts:read.',
  authScopes: (x, ctx) => readRule(ctx, 'Receipt', x.retractionId ? { type: 'Retraction', id: x.retractionId } : null),
  fields: (t) => ({
    beliefsRetracted: t.exposeInt('beliefsRetracted', { description: 'Beliefs taken down, the root included.' }),
    effectsCancelled: t.exposeInt('effectsCancelled', { description: 'PENDING effects cancelled: they can never run.' }),
    effectsReached: t.exposeInt('effectsReached', { description: 'Executed effects reached (owed + unreachable).' }),
    reversalsOwed: t.exposeInt('reversalsOwed', { description: 'Reversals recorded as owed (whatever their dispatch state since).' }),
    unreachable: t.exposeInt('unreachable', { description: 'Executed effects whose kind has no compensation.' }),
    exposure: t.field({ type: [MoneyRef], description: 'Executed money reached, per currency.', resolve: (x) => x.exposure }),
    owed: t.field({ type: [MoneyRef], description: 'Money owed back through reversals, per currency.', resolve: (x) => x.owed }),
    unreachableAmount: t.field({ type: [MoneyRef], description: 'Executed money with no way back, per currency.', resolve: (x) => x.unreachableAmount }),
    settled: t.field({ type: [MoneyRef], description: 'Confirmed by a provider. Zero until a provider reference arrives.', resolve: (x) => x.settled }),
  }),
});
