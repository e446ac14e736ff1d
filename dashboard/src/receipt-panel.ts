// The receipt panel: a retraction's counts and money (exposure, owed, unreachable, settled), fetched or as it arrives,
// and the form that takes the retraction back (reinstatement-panel.ts, which shows its receipt here too).
import { gql } from './api';
import { h } from './dom';
import { showError } from './notices';
import { RETRACTION_RECEIPT } from './operations';
import { page } from './page-state';
import { showInReceiptPanel } from './receipt-view';
import { reinstateForm } from './reinstatement-panel';
import type { ReceiptCore } from './types';
import { currenciesOf } from './widgets';

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
  page.receiptShown = {
    id: r.id,
    reason: r.reason,
    createdAt: r.createdAt,
    root: r.root,
    actor: r.actor,
    totals: r.totals,
  };
  const t = r.totals;
  showInReceiptPanel({
    kind: 'retraction',
    id: r.id,
    retractionId: r.id,
    title: 'Receipt',
    claimKey: r.root.claimKey,
    byline: ` by ${r.actor.name}`,
    createdAt: r.createdAt,
    reason: r.reason,
    counts: [
      ['Beliefs retracted', 'receipt-beliefs-retracted', t.beliefsRetracted],
      ['Effects cancelled', 'receipt-effects-cancelled', t.effectsCancelled],
      ['Effects reached', 'receipt-effects-reached', t.effectsReached],
      ['Reversals owed', 'receipt-reversals-owed', t.reversalsOwed],
      ['Unreachable', 'receipt-unreachable-count', t.unreachable],
    ],
    money: [
      ['Exposure', 'receipt-exposure', t.exposure],
      ['Owed', 'receipt-owed', t.owed],
      ['Unreachable', 'receipt-unreachable', t.unreachableAmount],
      ['Settled', 'receipt-settled', t.settled],
    ],
    currencies: currenciesOf(t),
    after: [
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
      reinstateForm(r.id),
    ],
  });
}
