// The history panel and the money strip: the fleet's recent retractions and reinstatements with their totals, read at
// sign-in (so the page does not start empty), newest first, and its open money at a glance; both read again when a
// retraction or a reinstatement commits.
import { gql } from './api';
import './history.css';
import { breakable, byId, clear, formatTime, h } from './dom';
import { formatMoneyList } from './money';
import { showError } from './notices';
import { HISTORY } from './operations';
import { showReceipt } from './receipt-panel';
import { loadReinstatement } from './reinstatement-panel';
import { canReadReceipts } from './scopes';
import type { Money } from './types';

const HISTORY_FIRST = 20;
const list = () => byId('history');
const summary = () => byId('history-summary');
const strip = () => byId('open-money');

/** Money as the page shows it, with each amount in data attributes (as the receipt's money is). */
function moneyText(testId: string, list: readonly Money[]): HTMLElement {
  const span = h('span', { 'data-testid': testId, className: 'money' }, formatMoneyList(list));
  for (const m of list)
    span.append(h('span', { hidden: true, 'data-currency': m.currency, 'data-amount-minor': m.amountMinor }));
  return span;
}

let loading: Promise<void> | null = null;
let again = false;

/** Reads the history and the open money; a call while one runs makes it run once more after, never twice at once. */
export function loadHistory(): Promise<void> {
  if (!canReadReceipts()) {
    summary().textContent =
      'The history and the open money need the receipts:read scope, which this token does not hold.';
    strip().hidden = true;
    return Promise.resolve();
  }
  if (loading) {
    again = true;
    return loading;
  }
  loading = (async () => {
    try {
      const data = await gql(HISTORY, { first: HISTORY_FIRST });
      render(data);
    } catch (err) {
      showError(err);
    } finally {
      loading = null;
      if (again) {
        again = false;
        void loadHistory();
      }
    }
  })();
  return loading;
}

function render(data: Awaited<ReturnType<typeof gql<typeof HISTORY>>>): void {
  const m = data.openMoney;
  strip().hidden = false;
  strip().replaceChildren(
    h(
      'span',
      { className: 'money-cell' },
      'Owed ',
      moneyText('open-money-owed', m.owed),
      h('span', { className: 'muted small', 'data-testid': 'open-money-owed-count' }, ` (${m.owedCount})`),
    ),
    h(
      'span',
      { className: 'money-cell' },
      'In flight ',
      moneyText('open-money-in-flight', m.inFlight),
      h('span', { className: 'muted small', 'data-testid': 'open-money-in-flight-count' }, ` (${m.inFlightCount})`),
    ),
    h(
      'span',
      { className: 'money-cell' },
      'Re-execution owed ',
      moneyText('open-money-reexecution', m.reexecutionOwed),
      h(
        'span',
        { className: 'muted small', 'data-testid': 'open-money-reexecution-count' },
        ` (${m.reexecutionOwedCount})`,
      ),
    ),
  );
  const r = data.retractions;
  summary().textContent =
    r.totalCount === 0
      ? 'No retraction yet.'
      : `${r.totalCount} retraction${r.totalCount === 1 ? '' : 's'}, newest first${r.totalCount > HISTORY_FIRST ? ` (the last ${HISTORY_FIRST} shown)` : ''}.`;
  const items: Array<{ at: string; li: HTMLElement }> = [];
  for (const { node } of r.edges) {
    const t = node.totals;
    items.push({
      at: node.createdAt,
      li: h(
        'li',
        {
          'data-testid': 'history-item',
          'data-kind': 'retraction',
          'data-retraction-id': node.id,
          'data-at': node.createdAt,
          className: 'history-item',
        },
        h('time', { datetime: node.createdAt }, formatTime(node.createdAt)),
        ' ',
        h('code', null, breakable(node.root.claimKey)),
        h('span', { className: 'muted small' }, ` by ${node.actor.name}: “${node.reason}”`),
        h(
          'span',
          { className: 'history-totals', 'data-testid': 'history-totals' },
          `${t.beliefsRetracted} beliefs · ${t.effectsCancelled} cancelled · owed `,
          moneyText('history-owed', t.owed),
          ' · unreachable ',
          moneyText('history-unreachable', t.unreachableAmount),
        ),
        h('button', { type: 'button', className: 'link', onclick: () => showReceipt(node) }, 'Receipt'),
      ),
    });
  }
  for (const { node } of data.reinstatements.edges) {
    const t = node.totals;
    items.push({
      at: node.createdAt,
      li: h(
        'li',
        {
          'data-testid': 'history-item',
          'data-kind': 'reinstatement',
          'data-reinstatement-id': node.id,
          'data-retraction-id': node.retraction.id,
          'data-at': node.createdAt,
          className: 'history-item',
        },
        h('time', { datetime: node.createdAt }, formatTime(node.createdAt)),
        ' reinstated ',
        h('code', null, breakable(node.retraction.root.claimKey)),
        h(
          'span',
          { className: 'muted small' },
          ` by ${node.actor.name}: “${node.reason}”${node.status === 'BLOCKED' ? ' (blocked by a contradiction)' : ''}`,
        ),
        h(
          'span',
          { className: 'history-totals', 'data-testid': 'history-totals' },
          `${t.beliefsReinstated} beliefs back · voided `,
          moneyText('history-voided', t.voided),
          ' · re-execution owed ',
          moneyText('history-reexecution', t.reexecutionOwed),
        ),
        h('button', { type: 'button', className: 'link', onclick: () => void loadReinstatement(node.id) }, 'Receipt'),
      ),
    });
  }
  // Both pages are newest first; merged by instant, a reinstatement sits above the retraction it took back.
  items.sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
  list().replaceChildren(...items.map((x) => x.li));
}

/** The instants of the retractions listed, newest first (the time slider marks them). */
export function historyInstants(): Date[] {
  return [...list().querySelectorAll<HTMLElement>('[data-at]')].map((li) => new Date(li.dataset.at!));
}

/** Signing out forgets what the panel showed. */
export function clearHistory(): void {
  clear(list());
  summary().textContent = '';
  strip().hidden = true;
}
