// The history panel and the money strip: the fleet's recent retractions and reinstatements with their totals, read at
// sign-in (so the page does not start empty), newest first, and its open money at a glance; both read again when a
// retraction or a reinstatement commits.
import { gql } from './api';
import './history.css';
import { breakable, byId, clear, formatTime, h } from './dom';
import { formatMoneyList } from './money';
import { showError } from './notices';
import { HISTORY } from './operations';
import { ask } from './page-events';
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
  const items = [
    ...r.edges.map(({ node }) =>
      historyItem(
        { kind: 'retraction', 'data-retraction-id': node.id, at: node.createdAt },
        ' ',
        node.root.claimKey,
        ` by ${node.actor.name}: “${node.reason}”`,
        [
          `${node.totals.beliefsRetracted} beliefs · ${node.totals.effectsCancelled} cancelled · owed `,
          moneyText('history-owed', node.totals.owed),
          ' · unreachable ',
          moneyText('history-unreachable', node.totals.unreachableAmount),
        ],
        () => ask('showReceipt', node),
      ),
    ),
    ...data.reinstatements.edges.map(({ node }) =>
      historyItem(
        {
          kind: 'reinstatement',
          'data-retraction-id': node.retraction.id,
          'data-reinstatement-id': node.id,
          at: node.createdAt,
        },
        ' reinstated ',
        node.retraction.root.claimKey,
        ` by ${node.actor.name}: “${node.reason}”${node.status === 'BLOCKED' ? ' (blocked by a contradiction)' : ''}`,
        [
          `${node.totals.beliefsReinstated} beliefs back · voided `,
          moneyText('history-voided', node.totals.voided),
          ' · re-execution owed ',
          moneyText('history-reexecution', node.totals.reexecutionOwed),
        ],
        () => ask('openReinstatement', node.id),
      ),
    ),
  ];
  // Both pages are newest first; merged by instant, a reinstatement sits above the retraction it took back.
  items.sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
  list().replaceChildren(...items.map((x) => x.li));
}

/** One line of the history: when, what (the root's claim), by whom and why, its totals, and its receipt a click away. */
function historyItem(
  ids: { kind: string; 'data-retraction-id': string; 'data-reinstatement-id'?: string; at: string },
  verb: string,
  claimKey: string,
  byline: string,
  totals: (Node | string)[],
  openReceipt: () => void,
): { at: string; li: HTMLElement } {
  const { kind, at, ...data } = ids;
  const li = h(
    'li',
    { 'data-testid': 'history-item', 'data-kind': kind, ...data, 'data-at': at, className: 'history-item' },
    h('time', { datetime: at }, formatTime(at)),
    verb,
    h('code', null, breakable(claimKey)),
    h('span', { className: 'muted small' }, byline),
    h('span', { className: 'history-totals', 'data-testid': 'history-totals' }, ...totals),
    h('button', { type: 'button', className: 'link', onclick: openReceipt }, 'Receipt'),
  );
  return { at, li };
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
