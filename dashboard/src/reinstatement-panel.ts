// Taking a retraction back from its receipt: the reinstate form, the reinstatement's receipt (what came back, the
// money voided, the re-executions owed, the effects restorable). The beliefs' return is played by cascade-player.ts
// from the events, like the fall, or applied at once when the events do not come.
import { gql } from './api';
import { applyReinstatementUnlessPlayed } from './cascade-player';
import { breakable, h } from './dom';
import { formatMoney } from './money';
import { showError } from './notices';
import { REINSTATE_RETRACTION, REINSTATEMENT_RECEIPT } from './operations';
import { showInReceiptPanel } from './receipt-view';
import { canReadReceipts, canRetract } from './scopes';
import type { Money, ReinstatementCore, ReinstatementReceipt } from './types';

const RECEIPT_FIRST = 100;

/** The form under a retraction's receipt that takes it back: beliefs:retract, as retracting is; null without it. */
export function reinstateForm(retractionId: string): HTMLElement | null {
  if (!canRetract()) return null;
  const reason = h('textarea', { id: 'reinstate-reason', 'data-testid': 'reinstate-reason', rows: 2, required: true });
  const note = h('p', { className: 'muted small', role: 'status', 'data-testid': 'reinstate-note' });
  const button = h(
    'button',
    { type: 'submit', 'data-testid': 'reinstate-button' },
    'Reinstate: the retraction was wrong',
  );
  const submit = (ev: Event) => {
    ev.preventDefault();
    void runReinstate(retractionId, reason, button, note);
  };
  return h(
    'form',
    { className: 'reinstate', novalidate: true, onsubmit: submit },
    h('label', { for: 'reinstate-reason' }, 'Why the retraction was wrong (recorded on the reinstatement)'),
    reason,
    button,
    note,
  );
}

async function runReinstate(
  retractionId: string,
  reason: HTMLTextAreaElement,
  button: HTMLButtonElement,
  note: HTMLElement,
): Promise<void> {
  const why = reason.value.trim();
  if (!why) {
    note.textContent = 'A reason is required: it is recorded on the reinstatement.';
    reason.setAttribute('aria-invalid', 'true');
    reason.focus();
    return;
  }
  reason.removeAttribute('aria-invalid');
  button.disabled = true;
  note.textContent = 'Reinstating…';
  try {
    const r = (
      await gql(REINSTATE_RETRACTION, {
        input: { retractionId, reason: why },
        first: RECEIPT_FIRST,
        canReadReceipts: canReadReceipts(),
      })
    ).reinstateRetraction;
    if (r.__typename === 'ReinstatementBlocked') {
      // Nothing came back: the root's claim holds another ACTIVE belief, and the contradiction must be adjudicated first.
      note.dataset.blocked = 'true';
      note.textContent = `Blocked: ${r.contradiction.claimKey} holds another ACTIVE belief. Contradiction ${r.contradiction.id} was raised; nothing is reinstated until it is resolved.`;
      button.disabled = false;
      return;
    }
    const rec = r.reinstatement;
    showReinstatement(rec);
    applyReinstatementUnlessPlayed(rec);
  } catch (err) {
    note.textContent = '';
    button.disabled = false;
    showError(err);
  }
}

export async function loadReinstatement(id: string): Promise<void> {
  try {
    const data = await gql(REINSTATEMENT_RECEIPT, { id, first: RECEIPT_FIRST, canReadReceipts: canReadReceipts() });
    if (!data.reinstatement) throw new Error('Reinstatement receipt not found.');
    showReinstatement(data.reinstatement);
  } catch (err) {
    showError(err);
  }
}

/** Money as a receipt shows it, with its currencies: voided, in flight and re-execution owed share them. */
function currencies(t: ReinstatementCore['totals']): string[] {
  return [...new Set([...t.voided, ...t.inFlight, ...t.reexecutionOwed].map((m) => m.currency))];
}

/** Shows a reinstatement's receipt in the receipt panel; a receipt with its lists (the mutation's, the query's) shows them too. */
function showReinstatement(r: ReinstatementCore | ReinstatementReceipt): void {
  const t = r.totals;
  const lines = 'moneyLines' in r && r.moneyLines ? r.moneyLines : [];
  showInReceiptPanel({
    kind: 'reinstatement',
    id: r.id,
    retractionId: r.retraction.id,
    title: 'Reinstatement',
    claimKey: r.retraction.root.claimKey,
    byline: ` taken back by ${r.actor.name}`,
    createdAt: r.createdAt,
    reason: r.reason,
    counts: [
      ['Beliefs reinstated', 'reinstatement-beliefs', t.beliefsReinstated],
      ['Reversals voided', 'reinstatement-voided-count', t.reversalsVoided],
      ['In flight', 'reinstatement-in-flight-count', t.reversalsInFlight],
      ['Re-executions owed', 'reinstatement-reexecution-count', t.reexecutionsOwed],
      ['Effects restorable', 'reinstatement-restorable-count', t.effectsRestorable],
    ],
    money: [
      ['Voided', 'reinstatement-voided', t.voided],
      ['In flight', 'reinstatement-in-flight', t.inFlight],
      ['Re-execution owed', 'reinstatement-reexecution', t.reexecutionOwed],
    ],
    currencies: currencies(t),
    after: [
      h(
        'ul',
        { className: 'small', 'data-testid': 'reinstatement-lines' },
        ...lines.map((l) =>
          h(
            'li',
            { 'data-line': l.line, 'data-reversal-id': l.reversal.id },
            `${l.effect.kind}: ${lineText(l.line, l.amount)}`,
            l.reexecutionKey ? h('code', null, ' ', breakable(l.reexecutionKey)) : null,
          ),
        ),
      ),
      h(
        'p',
        { className: 'muted small' },
        'RETRACT moves no money: a re-execution owed is named here under its key, never executed.',
      ),
    ],
  });
}

function lineText(line: string, amount: Money | null | undefined): string {
  const m = amount ? formatMoney(amount) : 'no amount';
  if (line === 'VOIDED') return `${m} voided (no longer needs to move)`;
  if (line === 'IN_FLIGHT') return `${m} in flight: the provider's answer decides`;
  return `${m} re-execution owed`;
}
