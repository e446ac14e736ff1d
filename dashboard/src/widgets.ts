// Small pieces every panel draws with: status badges, money lists, definition rows, scrolling a panel into view.
import { h } from './dom';
import { formatMoney, formatMoneyList } from './money';
import type { Money, Totals } from './types';

export function statusBadge(status: string): HTMLElement {
  const note = status === 'RETRACTED' ? ' (retracted)' : status === 'CANCELLED' ? ' (cancelled)' : '';
  return h('span', { className: `badge status-${status.toLowerCase()}`, 'data-status': status }, status, note);
}

/** Currencies that appear anywhere in a totals object, in first-seen order. */
export function currenciesOf(t: Totals): string[] {
  return [...new Set([...t.exposure, ...t.owed, ...t.unreachableAmount, ...t.settled].map((m) => m.currency))];
}

/**
 * Money list as text (`$1,240.00 + €50.00`), each amount in its own span with its currency and minor units as
 * data. A currency present elsewhere in the same totals but missing from this list is shown as zero (settled is
 * empty until a provider confirms); with no money at all the text is `none`.
 */
export function moneyEl(
  testid: string,
  list: readonly Money[] | null | undefined,
  currencies: string[] = [],
): HTMLElement {
  const span = h('span', { 'data-testid': testid, className: 'money' });
  const given = list ?? [];
  const filled = [
    ...given,
    ...currencies.filter((c) => !given.some((m) => m.currency === c)).map((currency) => ({ amountMinor: 0, currency })),
  ];
  if (filled.length === 0) {
    span.textContent = formatMoneyList(filled);
    span.dataset.empty = 'true';
    return span;
  }
  filled.forEach((m, i) => {
    if (i > 0) span.append(' + ');
    span.append(h('span', { 'data-currency': m.currency, 'data-amount-minor': m.amountMinor }, formatMoney(m)));
  });
  return span;
}

export function dlRow(dl: HTMLElement, label: string, value: Node | string): void {
  dl.append(h('dt', null, label), h('dd', null, value));
}

/** A receipt's counts, one row each: [label, data-testid, count]. */
export function countsList(rows: ReadonlyArray<readonly [string, string, number]>): HTMLElement {
  const dl = h('dl');
  for (const [label, testid, n] of rows) dlRow(dl, label, h('span', { 'data-testid': testid }, String(n)));
  return dl;
}

/** A receipt's money, one row each: [label, data-testid, amounts], every currency of `currencies` in every row. */
export function moneyList(
  rows: ReadonlyArray<readonly [string, string, readonly Money[]]>,
  currencies: string[],
): HTMLElement {
  const dl = h('dl', { className: 'money-table' });
  for (const [label, testid, list] of rows) dlRow(dl, label, moneyEl(testid, list, currencies));
  return dl;
}

/**
 * The selection column scrolls on its own (it stays beside the graph): scroll it, and only it, so a panel that just
 * appeared shows as much of itself as fits, top first.
 */
export function revealInColumn(panel: HTMLElement): void {
  const col = panel.closest<HTMLElement>('.col-right');
  if (!col || col.scrollHeight <= col.clientHeight) return;
  const c = col.getBoundingClientRect();
  const p = panel.getBoundingClientRect();
  const visibleBottom = Math.min(c.bottom, window.innerHeight);
  if (p.top < c.top) col.scrollTop -= c.top - p.top;
  else if (p.bottom > visibleBottom) col.scrollTop += Math.min(p.bottom - visibleBottom, p.top - c.top);
}
