// The receipt panel: a retraction's counts and money (exposure, owed, unreachable, settled), fetched or as it arrives.
import { gql } from './api';
import { breakable, formatTime, h } from './dom';
import { el } from './elements';
import { showError } from './notices';
import { RETRACTION_RECEIPT } from './operations';
import { page } from './page-state';
import type { ReceiptCore } from './types';
import { currenciesOf, dlRow, moneyEl, revealInColumn } from './widgets';

export async function loadReceipt(id: string): Promise<void> {
  try {
    const data = await gql(RETRACTION_RECEIPT, { id });
    if (!data.retraction) throw new Error('Receipt not found.');
    showReceipt(data.retraction);
  } catch (err) {
    showError(err);
  }
}

export function showReceipt(r: ReceiptCore): void {
  const fresh = el.receipt.hidden || el.receipt.dataset.retractionId !== r.id;
  page.receiptShown = { id: r.id, reason: r.reason, createdAt: r.createdAt, root: r.root, actor: r.actor, totals: r.totals };
  const t = r.totals;
  const counts = h('dl');
  dlRow(counts, 'Beliefs retracted', h('span', { 'data-testid': 'receipt-beliefs-retracted' }, String(t.beliefsRetracted)));
  dlRow(counts, 'Effects cancelled', h('span', { 'data-testid': 'receipt-effects-cancelled' }, String(t.effectsCancelled)));
  dlRow(counts, 'Effects reached', h('span', { 'data-testid': 'receipt-effects-reached' }, String(t.effectsReached)));
  dlRow(counts, 'Reversals owed', h('span', { 'data-testid': 'receipt-reversals-owed' }, String(t.reversalsOwed)));
  dlRow(counts, 'Unreachable', h('span', { 'data-testid': 'receipt-unreachable-count' }, String(t.unreachable)));
  const money = h('dl', { className: 'money-table' });
  const cur = currenciesOf(t);
  dlRow(money, 'Exposure', moneyEl('receipt-exposure', t.exposure, cur));
  dlRow(money, 'Owed', moneyEl('receipt-owed', t.owed, cur));
  dlRow(money, 'Unreachable', moneyEl('receipt-unreachable', t.unreachableAmount, cur));
  dlRow(money, 'Settled', moneyEl('receipt-settled', t.settled, cur));
  el.receipt.replaceChildren(
    h('h3', null, 'Receipt'),
    h(
      'p',
      null,
      'Retraction of ',
      h('code', null, breakable(r.root.claimKey)),
      ` by ${r.actor.name}`,
      r.createdAt ? ` at ${formatTime(r.createdAt)}` : '',
      `: “${r.reason}”`,
    ),
    counts,
    money,
    h('p', { className: 'muted small' }, 'Settled counts only reversals a provider has confirmed with its own reference.'),
    h('button', { type: 'button', 'data-testid': 'receipt-refresh', onclick: () => void loadReceipt(r.id) }, 'Refresh receipt'),
  );
  el.receipt.dataset.retractionId = r.id;
  el.receipt.hidden = false;
  if (fresh) revealInColumn(el.receipt);
}
