// The receipt panel's one drawing, for a retraction's receipt (receipt-panel.ts) and a reinstatement's
// (reinstatement-panel.ts): a heading; which retraction, by whom, when and why; the counts and the money; then what
// that kind of receipt adds. The panel says in its data attributes which receipt it shows (the cascade and the browser
// test read them).
import { breakable, formatTime, h } from './dom';
import { el } from './elements';
import type { Money } from './types';
import { countsList, moneyList, revealInColumn } from './widgets';

export interface ReceiptView {
  kind: 'retraction' | 'reinstatement';
  /** The receipt's own id: the retraction's, or the reinstatement's. */
  id: string;
  retractionId: string;
  title: string;
  /** The retraction's root claim, and who did what: " by Alice", " taken back by Alice". */
  claimKey: string;
  byline: string;
  createdAt: string | null | undefined;
  reason: string;
  /** [label, data-testid, count] rows, then [label, data-testid, amounts] rows in every currency of `currencies`. */
  counts: ReadonlyArray<readonly [string, string, number]>;
  money: ReadonlyArray<readonly [string, string, readonly Money[]]>;
  currencies: string[];
  after: ReadonlyArray<Node | null>;
}

export function showInReceiptPanel(v: ReceiptView): void {
  const shown = v.kind === 'retraction' ? el.receipt.dataset.retractionId : el.receipt.dataset.reinstatementId;
  const fresh = el.receipt.hidden || shown !== v.id;
  el.receipt.replaceChildren(
    h('h3', null, v.title),
    h(
      'p',
      null,
      'Retraction of ',
      h('code', null, breakable(v.claimKey)),
      v.byline,
      v.createdAt ? ` at ${formatTime(v.createdAt)}` : '',
      `: “${v.reason}”`,
    ),
    countsList(v.counts),
    moneyList(v.money, v.currencies),
    ...v.after.filter((n): n is Node => n !== null),
  );
  el.receipt.dataset.retractionId = v.retractionId;
  if (v.kind === 'reinstatement') el.receipt.dataset.reinstatementId = v.id;
  else delete el.receipt.dataset.reinstatementId;
  el.receipt.dataset.kind = v.kind;
  el.receipt.hidden = false;
  if (fresh) revealInColumn(el.receipt);
}
