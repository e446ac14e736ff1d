import type { Money } from './types';

const formatters = new Map<string, Intl.NumberFormat | null>();

function formatterFor(currency: string): Intl.NumberFormat | null {
  if (!formatters.has(currency)) {
    let f: Intl.NumberFormat | null = null;
    try {
      f = new Intl.NumberFormat('en-US', { style: 'currency', currency });
    } catch {
      f = null; // not an ISO 4217 code
    }
    formatters.set(currency, f);
  }
  return formatters.get(currency) ?? null;
}

/** Integer minor units → exact decimal string with `digits` fraction digits (no float rounding). */
function minorToDecimal(amountMinor: number, digits: number): string {
  const negative = amountMinor < 0;
  const abs = BigInt(Math.trunc(Math.abs(amountMinor)));
  if (digits === 0) return `${negative ? '-' : ''}${abs}`;
  const scale = 10n ** BigInt(digits);
  const int = abs / scale;
  const frac = (abs % scale).toString().padStart(digits, '0');
  return `${negative ? '-' : ''}${int}.${frac}`;
}

/** `{ amountMinor: 124000, currency: 'USD' }` → `$1,240.00`; `JPY 500` → `¥500`. */
export function formatMoney(m: Money): string {
  const f = formatterFor(m.currency);
  if (!f) return `${minorToDecimal(m.amountMinor, 2)} ${m.currency}`;
  const digits = f.resolvedOptions().maximumFractionDigits ?? 2;
  return f.format(minorToDecimal(m.amountMinor, digits) as Intl.StringNumericLiteral);
}

/** Per-currency list, e.g. `$1,240.00 + €50.00`; `none` when empty. */
export function formatMoneyList(list: readonly Money[] | null | undefined): string {
  if (!list || list.length === 0) return 'none';
  return list.map(formatMoney).join(' + ');
}
