/** Human-readable figures for receipts (MCP text content, the demo, the CLI). */

const formatters = new Map<string, Intl.NumberFormat>();

function formatter(currency: string): Intl.NumberFormat {
  let f = formatters.get(currency);
  if (!f) {
    // Any three-letter code is well-formed for Intl; unknown ones print as "ZZZ 0.99".
    f = new Intl.NumberFormat('en-US', { style: 'currency', currency, currencyDisplay: 'narrowSymbol' });
    formatters.set(currency, f);
  }
  return f;
}

/**
 * Integer minor units as money in the currency's own exponent: 124000 USD → "$1,240.00",
 * 500 JPY → "¥500". Exact at any size (bigint arithmetic, no floating-point division).
 */
export function formatMoney(amountMinor: number | bigint | string, currency: string): string {
  const f = formatter(currency);
  const digits = f.resolvedOptions().maximumFractionDigits ?? 2;
  const x = BigInt(amountMinor);
  const neg = x < 0n;
  const abs = neg ? -x : x;
  const scale = 10n ** BigInt(digits);
  const whole = abs / scale;
  const frac = abs % scale;
  // Format the whole part through Intl (symbol, grouping), then splice in the exact fraction.
  const parts = f.formatToParts(whole);
  let out = '';
  for (const p of parts) {
    if (p.type === 'fraction') out += frac.toString().padStart(digits, '0');
    else out += p.value;
  }
  if (digits > 0 && !parts.some((p) => p.type === 'fraction')) out += `.${frac.toString().padStart(digits, '0')}`;
  return neg ? `-${out}` : out;
}

/** A list of per-currency amounts, "$1,240.00 + €20.00"; `zero` when empty. */
export function formatMonies(list: ReadonlyArray<{ amountMinor: number; currency: string }>, zero = '0'): string {
  if (list.length === 0) return zero;
  return list.map((m) => formatMoney(m.amountMinor, m.currency)).join(' + ');
}
