import type { FieldMap } from '@pothos/core';
import { capped, exactMinor, type Money } from '../../kernel/money';
import type { Totals } from '../../kernel/money';
import { type OpenMoney, openMoney } from '../../reversal/open-money.repository';
import { builder, readRule } from '../builder';
import type { Types } from '../shapes';
import { fleetRead } from '../loaders';

const MoneyRef = builder.objectRef<Money>('Money').implement({
  description: 'An amount in integer minor units (cents) and its ISO 4217 currency.',
  fields: (t) => ({
    amountMinor: t.field({
      type: 'SafeInt',
      description:
        'Integer minor units, e.g. 124000 for $1,240.00. Exact up to 2^53−1; a total above that answers 9007199254740991 with amountMinorCapped true: read amountMinorExact.',
      resolve: (m) => capped(m.amountMinor).amountMinor,
    }),
    amountMinorExact: t.string({
      description: 'The exact integer minor units as a decimal string, at any size (totals may pass 2^53−1).',
      resolve: (m) => exactMinor(m.amountMinor).toString(),
    }),
    amountMinorCapped: t.boolean({
      description: 'True when the exact amount is beyond 2^53−1 and amountMinor shows 9007199254740991 instead of it.',
      resolve: (m) => capped(m.amountMinor).capped,
    }),
    currency: t.exposeString('currency', { description: 'ISO 4217 code, e.g. USD.' }),
  }),
});

export const MoneyInput = builder.inputType('MoneyInput', {
  description: 'An amount in integer minor units and its currency.',
  fields: (t) => ({
    amountMinor: t.field({ type: 'SafeInt', required: true, description: 'Positive integer minor units.' }),
    currency: t.string({ required: true, description: 'An ISO 4217 currency code in capitals, e.g. USD.' }),
  }),
});

/** Money from a row's amount_minor/currency columns; null when the row carries no money. */
function moneyOf(row: { amount_minor: unknown; currency: unknown }): Money | null {
  return row.amount_minor == null || row.currency == null
    ? null
    : { amountMinor: String(row.amount_minor), currency: String(row.currency) };
}

/** A row's `amount`: the Money its amount_minor/currency columns carry, or null when it carries none. */
export function amountField<T extends { amount_minor: unknown; currency: unknown }>(
  t: PothosSchemaTypes.ObjectFieldBuilder<Types, T>,
  description: string,
) {
  return t.field({ type: MoneyRef, nullable: true, description, resolve: (r) => moneyOf(r) });
}

/** Keys of T whose values are V. */
type KeysOf<T, V> = { [K in keyof T]-?: T[K] extends V ? K : never }[keyof T] & string;

/**
 * A receipt's figures: each count an Int and each per-currency sum a [Money], read off the property of its
 * name, counts first. The maps name every count and every sum of T.
 */
export function figureFields<T extends object>(
  t: PothosSchemaTypes.ObjectFieldBuilder<Types, T>,
  counts: Record<KeysOf<T, number>, string>,
  sums: Record<KeysOf<T, Money[]>, string>,
): FieldMap {
  const fields: FieldMap = {};
  for (const [k, description] of Object.entries<string>(counts))
    fields[k] = t.int({ description, resolve: (x) => (x as Record<string, number>)[k]! });
  for (const [k, description] of Object.entries<string>(sums))
    fields[k] = t.field({ type: [MoneyRef], description, resolve: (x) => (x as Record<string, Money[]>)[k]! });
  return fields;
}

/** A retraction's totals carry its id, so the grant of a retraction this request made covers them. */
export const TotalsRef = builder.objectRef<Totals & { retractionId?: string }>('RetractionTotals').implement({
  description: 'The figures of a receipt, computed from the rows themselves. Needs receipts:read.',
  authScopes: (x, ctx) => readRule(ctx, 'Receipt', x.retractionId ? { type: 'Retraction', id: x.retractionId } : null),
  fields: (t) =>
    figureFields(
      t,
      {
        beliefsRetracted: 'Beliefs taken down, the root included.',
        effectsCancelled: 'PENDING effects cancelled: they can never run.',
        effectsReached: 'Executed effects reached (owed + unreachable).',
        reversalsOwed: 'Reversals recorded as owed (whatever their dispatch state since).',
        unreachable: 'Executed effects whose kind has no compensation.',
      },
      {
        exposure: 'Executed money reached, per currency.',
        owed: 'Money owed back through reversals, per currency.',
        unreachableAmount: 'Executed money with no way back, per currency.',
        settled: 'Confirmed by a provider. Zero until a provider reference arrives.',
      },
    ),
});

/** The fleet's open money (src/reversal/open-money.repository.ts); a receipt-level figure, so receipts:read. */
const OpenMoneyRef = builder.objectRef<OpenMoney>('OpenMoney').implement({
  description:
    "The fleet's open money: reversals OWED (not yet sent) and DISPATCHED (in flight), and re-executions owed after reinstatements. Needs receipts:read.",
  authScopes: (_x, ctx) => readRule(ctx, 'Receipt'),
  fields: (t) => ({
    owedCount: t.exposeInt('owedCount', { description: 'Reversals OWED, not yet sent to a provider.' }),
    owed: t.expose('owed', { type: [MoneyRef], description: 'Their sum, per currency.' }),
    inFlightCount: t.exposeInt('inFlightCount', {
      description: "Reversals DISPATCHED, awaiting the provider's answer.",
    }),
    inFlight: t.expose('inFlight', { type: [MoneyRef], description: 'Their sum, per currency.' }),
    reexecutionOwedCount: t.exposeInt('reexecutionOwedCount', {
      description:
        'Reversals a reinstatement found CONFIRMED: the money came back and should not have. Named, never executed by RETRACT.',
    }),
    reexecutionOwed: t.expose('reexecutionOwed', { type: [MoneyRef], description: 'Their sum, per currency.' }),
  }),
});

builder.queryField('openMoney', (t) =>
  t.field({
    type: OpenMoneyRef,
    authScopes: { scope: 'receipts:read' },
    description: "The fleet's open money at a glance: reversals owed and in flight, per currency.",
    resolve: (_r, _a, ctx) => fleetRead(ctx, (tx) => openMoney(tx, ctx.agent!.fleet_id)),
  }),
);
