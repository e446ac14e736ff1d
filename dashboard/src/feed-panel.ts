// The live feed: every cascade step over graphql-ws in commit order, and the connection's state in the top bar.
import { getToken, wsEndpoint } from './api';
import { playCascadeEvent } from './cascade-player';
import { formatTime, h } from './dom';
import { el } from './elements';
import { LiveFeed, type ConnInfo, type ConnState } from './live';
import { loadHistory } from './history-panel';
import { formatMoney, formatMoneyList } from './money';
import { showError } from './notices';
import { ask } from './page-events';
import { page } from './page-state';
import { canReadReceipts } from './scopes';
import type { RetractionEvent } from './types';

const FEED_MAX = 200;
const FEED_EMPTY = 'No retraction events since you signed in.';

function setConn(state: ConnState, info: ConnInfo): void {
  el.connectionStatus.dataset.state = state;
  el.connectionStatus.dataset.reconnects = String(info.reconnects);
  el.connectionStatus.textContent = state;
  el.connectionStatus.title = info.message ?? '';
  if (info.lastCursor) el.feed.dataset.lastCursor = info.lastCursor;
}

export function startFeed(): void {
  const token = getToken();
  if (!token) return;
  if (!canReadReceipts()) {
    setConn('unauthorized', {
      reconnects: 0,
      lastCursor: null,
      message: 'The live feed needs the receipts:read scope.',
    });
    el.feedEmpty.textContent = 'The live feed needs the receipts:read scope, which this token does not hold.';
    return;
  }
  el.feedEmpty.textContent = FEED_EMPTY;
  page.feed = new LiveFeed({
    url: wsEndpoint(),
    token,
    onEvent: onEvent,
    onState: setConn,
    onError: (m) => showError(new Error(m)),
  });
  page.feed.start();
}

function describeEvent(ev: RetractionEvent): string {
  const root = ev.retraction.root.claimKey;
  switch (ev.__typename) {
    case 'RetractionStarted':
      return `${root} — retraction started by ${ev.retraction.actor.name}: “${ev.retraction.reason}”`;
    case 'BeliefRetracted': {
      const e = ev as Extract<RetractionEvent, { __typename: 'BeliefRetracted' }>;
      return `depth ${e.depth}: ${e.belief.claimKey} (retracted)`;
    }
    case 'EffectCancelled': {
      const e = ev as Extract<RetractionEvent, { __typename: 'EffectCancelled' }>;
      return `${e.effect.kind}${e.effect.amount ? ` ${formatMoney(e.effect.amount)}` : ''} cancelled (was pending)`;
    }
    case 'ReversalRecorded': {
      const e = ev as Extract<RetractionEvent, { __typename: 'ReversalRecorded' }>;
      return `reversal of ${e.reversal.effect.kind}${e.reversal.amount ? ` ${formatMoney(e.reversal.amount)}` : ''}: ${e.reversal.status}`;
    }
    case 'RetractionCommitted': {
      const e = ev as Extract<RetractionEvent, { __typename: 'RetractionCommitted' }>;
      return `${root} — committed: ${e.totals.beliefsRetracted} beliefs, ${e.totals.effectsCancelled} cancelled, exposure ${formatMoneyList(e.totals.exposure)}, owed ${formatMoneyList(e.totals.owed)}`;
    }
    case 'ReinstatementStarted':
      return `${root} — reinstatement started: the retraction is being taken back`;
    case 'BeliefReinstated': {
      const e = ev as Extract<RetractionEvent, { __typename: 'BeliefReinstated' }>;
      return `back at level ${e.depth}: ${e.belief.claimKey} (reinstated)`;
    }
    case 'ReversalVoided': {
      const e = ev as Extract<RetractionEvent, { __typename: 'ReversalVoided' }>;
      return `reversal of ${e.reversal.effect.kind}${e.reversal.amount ? ` ${formatMoney(e.reversal.amount)}` : ''} voided`;
    }
    case 'ReinstatementCommitted': {
      const e = ev as Extract<RetractionEvent, { __typename: 'ReinstatementCommitted' }>;
      const t = e.reinstatement.totals;
      return `${root} — reinstated: ${t.beliefsReinstated} beliefs back, voided ${formatMoneyList(t.voided)}, re-execution owed ${formatMoneyList(t.reexecutionOwed)}`;
    }
    default:
      return root;
  }
}

function renderFeedItem(ev: RetractionEvent): void {
  const li = h(
    'li',
    {
      'data-testid': 'feed-item',
      'data-type': ev.__typename,
      'data-cursor': ev.cursor,
      'data-retraction-id': ev.retraction.id,
      className: `feed-item type-${ev.__typename}`,
    },
    h('time', { datetime: ev.at }, formatTime(ev.at)),
    h('span', { className: 'feed-type' }, ev.__typename),
    h('span', { className: 'feed-text' }, describeEvent(ev)),
  );
  if (ev.__typename === 'RetractionCommitted') {
    const e = ev as Extract<RetractionEvent, { __typename: 'RetractionCommitted' }>;
    li.append(
      h(
        'button',
        {
          type: 'button',
          className: 'link',
          onclick: () => ask('showReceipt', { ...e.retraction, createdAt: e.at, totals: e.totals }),
        },
        'Show receipt',
      ),
    );
  }
  if (ev.__typename === 'ReinstatementCommitted') {
    const e = ev as Extract<RetractionEvent, { __typename: 'ReinstatementCommitted' }>;
    li.dataset.reinstatementId = e.reinstatement.id;
    li.append(
      h(
        'button',
        { type: 'button', className: 'link', onclick: () => ask('openReinstatement', e.reinstatement.id) },
        'Show receipt',
      ),
    );
  }
  el.feed.prepend(li);
  el.feedEmpty.hidden = true;
  while (el.feed.children.length > FEED_MAX) el.feed.lastElementChild?.remove();
}

function onEvent(ev: RetractionEvent): void {
  renderFeedItem(ev);
  if (ev.__typename === 'RetractionCommitted') page.committedSeen.add(ev.retraction.id);
  if (ev.__typename === 'RetractionCommitted' || ev.__typename === 'ReinstatementCommitted') void loadHistory();
  playCascadeEvent(ev);
}
