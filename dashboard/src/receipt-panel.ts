// The receipt panel: a retraction's counts and money (exposure, owed, unreachable, settled), fetched or as it arrives,
// and the form that takes the retraction back (reinstatement-panel.ts, which shows its receipt here too).
import { gql } from './api';
import { breakable, formatTime, h } from './dom';
import { el } from './elements';
import { showError } from './notices';
import { RETRACTION_RECEIPT } from './operations';
import { page } from './page-state';
import { reinstateForm } from './reinstatement-panel';
import type { ReceiptCore } from './types';
import { countsList, currenciesOf, moneyList, revealInColumn } from './widgets';

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
  page.receiptShown = {
    id: r.id,
    reason: r.reason,
    createdAt: r.createdAt,
    root: r.root,
    actor: r.actor,
    totals: r.totals,
  };
  const t = r.totals;
  const counts = countsList([
    ['Beliefs retracted', 'receipt-beliefs-retracted', t.beliefsRetracted],
    ['Effects cancelled', 'receipt-effects-cancelled', t.effectsCancelled],
    ['Effects reached', 'receipt-effects-reached', t.effectsReached],
    ['Reversals owed', 'receipt-reversals-owed', t.reversalsOwed],
    ['Unreachable', 'receipt-unreachable-count', t.unreachable],
  ]);
  const money = moneyList(
    [
      ['Exposure', 'receipt-exposure', t.exposure],
      ['Owed', 'receipt-owed', t.owed],
      ['Unreachable', 'receipt-unreachable', t.unreachableAmount],
      ['Settled', 'receipt-settled', t.settled],
    ],
    currenciesOf(t),
  );
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
    h(
      'p',
      { className: 'muted small' },
      'Settled counts only reversals a provider has confirmed with its own reference.',
    ),
    h(
      'button',
      { type: 'button', 'data-testid': 'receipt-refresh', onclick: () => void loadReceipt(r.id) },
      'Refresh receipt',
    ),
  );
  const form = reinstateForm(r.id);
  if (form) el.receipt.append(form);
  el.receipt.dataset.retractionId = r.id;
  el.receipt.dataset.kind = 'retraction';
  delete el.receipt.dataset.reinstatementId;
  el.receipt.hidden = false;
  if (fresh) revealInColumn(el.receipt);
}
