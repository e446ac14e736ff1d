import './style.css';
import { gql, GraphQLRequestError, getToken, loadToken, setToken, wsEndpoint } from './api';
import { breakable, byId, clear, formatTime, h, sleep } from './dom';
import { GraphView, type GraphNode, type PreviewMark } from './graph';
import { LiveFeed, type ConnInfo, type ConnState } from './live';
import { formatMoney, formatMoneyList } from './money';
import {
  BELIEF_NEIGHBORHOOD,
  BELIEFS,
  PREVIEW_RETRACTION,
  RETRACT_BELIEF,
  RETRACTION_RECEIPT,
  SEARCH,
  VIEWER,
} from './operations';
import type {
  BeliefDetail,
  BeliefListItem,
  BeliefRef,
  BeliefStatus,
  Money,
  Preview,
  ReceiptCore,
  RetractionEvent,
  RetractionResult,
  Totals,
  Viewer,
} from './types';

// ---------------------------------------------------------------- elements

const el = {
  signinView: byId('signin-view'),
  signinForm: byId<HTMLFormElement>('signin-form'),
  tokenInput: byId<HTMLInputElement>('token-input'),
  signinButton: byId<HTMLButtonElement>('sign-in'),
  signinError: byId('signin-error'),
  appView: byId('app-view'),
  viewer: byId('viewer'),
  viewerName: byId('viewer-name'),
  viewerFleet: byId('viewer-fleet'),
  viewerScopes: byId('viewer-scopes'),
  signOut: byId<HTMLButtonElement>('sign-out'),
  connStatus: byId('connection-status'),
  errorBanner: byId('error-banner'),
  announcer: byId('announcer'),
  searchForm: byId<HTMLFormElement>('search-form'),
  searchInput: byId<HTMLInputElement>('search-input'),
  searchStatus: byId<HTMLSelectElement>('search-status'),
  searchSummary: byId('search-summary'),
  searchResults: byId('search-results'),
  feed: byId('feed'),
  feedEmpty: byId('feed-empty'),
  levelsUp: byId<HTMLSelectElement>('levels-up'),
  levelsDown: byId<HTMLSelectElement>('levels-down'),
  graphEmpty: byId('graph-empty'),
  graph: byId('graph'),
  nodeList: byId('graph-node-list'),
  detail: byId('detail'),
  actions: byId('actions'),
  previewButton: byId<HTMLButtonElement>('preview-button'),
  previewPanel: byId('preview-panel'),
  retractForm: byId<HTMLFormElement>('retract-form'),
  retractReason: byId<HTMLTextAreaElement>('retract-reason'),
  retractButton: byId<HTMLButtonElement>('retract-button'),
  retractNote: byId('retract-note'),
  receipt: byId('receipt'),
};

// ---------------------------------------------------------------- state

const MAX_EXPANDED = 120;
const DEPENDENTS_PAGE = 50;
const CASCADE_STEP_MS = 450;
const FEED_MAX = 200;
const FEED_EMPTY = 'No retraction events since you signed in.';

let viewer: Viewer | null = null;
let feed: LiveFeed | null = null;
let graph: GraphView | null = null;
let graphSeq = 0;
let searchSeq = 0;
const details = new Map<string, BeliefDetail>();
let selected: GraphNode | null = null;
let previewFor: string | null = null;
let receiptShown: ReceiptCore | null = null;
/** Retractions whose RetractionCommitted event has arrived over the socket. */
const committedSeen = new Set<string>();

// ---------------------------------------------------------------- small helpers

function announce(text: string): void {
  el.announcer.textContent = '';
  requestAnimationFrame(() => (el.announcer.textContent = text));
}

function showError(err: unknown): void {
  if ((err as Error)?.name === 'AbortError') return;
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof GraphQLRequestError && err.unauthenticated && viewer) {
    signOut('Your session is no longer valid: ' + message);
    return;
  }
  el.errorBanner.replaceChildren(
    h('span', null, message),
    h('button', { type: 'button', className: 'link', 'aria-label': 'Dismiss error', onclick: () => (el.errorBanner.hidden = true) }, 'Dismiss'),
  );
  el.errorBanner.hidden = false;
}

function clearError(): void {
  el.errorBanner.hidden = true;
}

function hasScope(scope: string): boolean {
  return !!viewer && (viewer.scopes.includes(scope) || viewer.scopes.includes('admin'));
}

/** The live feed, receipts, reversals and totals need `receipts:read` (admin implies every scope). */
function canReadReceipts(): boolean {
  return hasScope('receipts:read');
}

/** Effects are open to either effects scope or to receipts:read. */
function canReadEffects(): boolean {
  return hasScope('effects:propose') || hasScope('effects:execute') || canReadReceipts();
}

/** The @include variables of every document that reaches effects or receipts (see operations.ts). */
function readVars(): { canReadEffects: boolean; canReadReceipts: boolean } {
  return { canReadEffects: canReadEffects(), canReadReceipts: canReadReceipts() };
}

function canRetract(): boolean {
  return !!viewer && (viewer.scopes.includes('beliefs:retract') || viewer.scopes.includes('admin'));
}

function statusBadge(status: string): HTMLElement {
  const note = status === 'RETRACTED' ? ' (retracted)' : status === 'CANCELLED' ? ' (cancelled)' : '';
  return h('span', { className: `badge status-${status.toLowerCase()}`, 'data-status': status }, status, note);
}

/** Currencies that appear anywhere in a totals object, in first-seen order. */
function currenciesOf(t: Totals): string[] {
  return [...new Set([...t.exposure, ...t.owed, ...t.unreachableAmount, ...t.settled].map((m) => m.currency))];
}

/**
 * Money list as text (`$1,240.00 + €50.00`), each amount in its own span with its currency and minor units as
 * data. A currency present elsewhere in the same totals but missing from this list is shown as zero (settled is
 * empty until a provider confirms); with no money at all the text is `none`.
 */
function moneyEl(testid: string, list: readonly Money[] | null | undefined, currencies: string[] = []): HTMLElement {
  const span = h('span', { 'data-testid': testid, className: 'money' });
  const given = list ?? [];
  const filled = [...given, ...currencies.filter((c) => !given.some((m) => m.currency === c)).map((currency) => ({ amountMinor: 0, currency }))];
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

function dlRow(dl: HTMLElement, label: string, value: Node | string): void {
  dl.append(h('dt', null, label), h('dd', null, value));
}

/**
 * The selection column scrolls on its own (it stays beside the graph): scroll it, and only it, so a panel that just
 * appeared shows as much of itself as fits, top first.
 */
function revealInColumn(panel: HTMLElement): void {
  const col = panel.closest<HTMLElement>('.col-right');
  if (!col || col.scrollHeight <= col.clientHeight) return;
  const c = col.getBoundingClientRect();
  const p = panel.getBoundingClientRect();
  const visibleBottom = Math.min(c.bottom, window.innerHeight);
  if (p.top < c.top) col.scrollTop -= c.top - p.top;
  else if (p.bottom > visibleBottom) col.scrollTop += Math.min(p.bottom - visibleBottom, p.top - c.top);
}

async function inChunks<T, R>(items: T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return out;
}

// ---------------------------------------------------------------- sign in / out

async function signIn(token: string, fromStorage = false): Promise<void> {
  el.signinError.textContent = '';
  el.signinButton.disabled = true;
  setToken(token);
  try {
    const data = await gql(VIEWER, {});
    onSignedIn(data.viewer);
  } catch (err) {
    setToken(null);
    el.signinError.textContent = fromStorage
      ? 'The saved session is no longer valid. Paste a token to sign in.'
      : `Sign-in failed: ${(err as Error).message}`;
    el.tokenInput.focus();
  } finally {
    el.signinButton.disabled = false;
  }
}

function onSignedIn(v: Viewer): void {
  viewer = v;
  el.tokenInput.value = '';
  el.viewerName.textContent = v.name;
  el.viewerFleet.textContent = `fleet ${v.fleet}`;
  el.viewerScopes.textContent = `scopes: ${v.scopes.join(', ') || 'none'}`;
  el.viewerScopes.title = el.viewerScopes.textContent;
  el.viewer.hidden = false;
  el.signinView.hidden = true;
  el.appView.hidden = false;
  clearError();
  startFeed();
  void runSearch();
  el.searchInput.focus();
}

function signOut(message?: string): void {
  feed?.stop();
  feed = null;
  viewer = null;
  setToken(null);
  graph?.clearAll();
  details.clear();
  selected = null;
  previewFor = null;
  receiptShown = null;
  committedSeen.clear();
  clear(el.searchResults);
  clear(el.feed);
  el.feedEmpty.hidden = false;
  el.searchSummary.textContent = '';
  el.receipt.hidden = true;
  el.actions.hidden = true;
  el.previewPanel.hidden = true;
  el.detail.replaceChildren(h('p', { className: 'muted' }, 'Nothing selected.'));
  el.graphEmpty.hidden = false;
  el.viewer.hidden = true;
  el.appView.hidden = true;
  el.signinView.hidden = false;
  el.errorBanner.hidden = true;
  el.signinError.textContent = message ?? '';
  el.tokenInput.focus();
}

// ---------------------------------------------------------------- live feed + cascade animation

function setConn(state: ConnState, info: ConnInfo): void {
  el.connStatus.dataset.state = state;
  el.connStatus.dataset.reconnects = String(info.reconnects);
  el.connStatus.textContent = state;
  el.connStatus.title = info.message ?? '';
  if (info.lastCursor) el.feed.dataset.lastCursor = info.lastCursor;
}

function startFeed(): void {
  const token = getToken();
  if (!token) return;
  if (!canReadReceipts()) {
    setConn('unauthorized', { reconnects: 0, lastCursor: null, message: 'The live feed needs the receipts:read scope.' });
    el.feedEmpty.textContent = 'The live feed needs the receipts:read scope, which this token does not hold.';
    return;
  }
  el.feedEmpty.textContent = FEED_EMPTY;
  feed = new LiveFeed({
    url: wsEndpoint(),
    token,
    onEvent: onEvent,
    onState: setConn,
    onError: (m) => showError(new Error(m)),
  });
  feed.start();
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
          onclick: () => showReceipt({ ...e.retraction, createdAt: e.at, totals: e.totals }),
        },
        'Show receipt',
      ),
    );
  }
  el.feed.prepend(li);
  el.feedEmpty.hidden = true;
  while (el.feed.children.length > FEED_MAX) el.feed.lastElementChild?.remove();
}

const cascadeQueue: RetractionEvent[] = [];
let cascadeRunning = false;
/** The retraction being played and its current phase (depth level, effects, committed); survives idle gaps. */
let cascadeRetraction: string | null = null;
let cascadePhase: string | null = null;

function onEvent(ev: RetractionEvent): void {
  renderFeedItem(ev);
  if (ev.__typename === 'RetractionCommitted') committedSeen.add(ev.retraction.id);
  cascadeQueue.push(ev);
  if (!cascadeRunning) void runCascade();
}

/** Plays cascade events onto the graph one depth level at a time (events arrive in commit order). */
async function runCascade(): Promise<void> {
  cascadeRunning = true;
  try {
    while (cascadeQueue.length) {
      const ev = cascadeQueue.shift()!;
      if (ev.retraction.id !== cascadeRetraction) {
        cascadeRetraction = ev.retraction.id;
        cascadePhase = null;
      }
      await applyEvent(ev, async (nextPhase) => {
        if (cascadePhase !== null && cascadePhase !== nextPhase) await sleep(CASCADE_STEP_MS);
        cascadePhase = nextPhase;
      });
    }
  } catch (err) {
    showError(err);
  } finally {
    cascadeRunning = false;
  }
}

async function applyEvent(ev: RetractionEvent, step: (phase: string) => Promise<void>): Promise<void> {
  switch (ev.__typename) {
    case 'BeliefRetracted': {
      const e = ev as Extract<RetractionEvent, { __typename: 'BeliefRetracted' }>;
      markSearchItem(e.belief.id, 'RETRACTED');
      const d = details.get(e.belief.id);
      if (d) d.status = 'RETRACTED';
      if (graph?.has(e.belief.id)) {
        await step(`belief:${e.depth}`);
        graph.setStatus(e.belief.id, 'RETRACTED', true);
        announce(`Depth ${e.depth}: ${e.belief.claimKey} retracted.`);
        refreshSelectedIf(e.belief.id);
      }
      return;
    }
    case 'EffectCancelled': {
      const e = ev as Extract<RetractionEvent, { __typename: 'EffectCancelled' }>;
      if (graph?.has(e.effect.id)) {
        await step('effects');
        graph.setStatus(e.effect.id, 'CANCELLED', true);
        announce(`Effect ${e.effect.kind} cancelled.`);
        refreshSelectedIf(e.effect.id);
      }
      return;
    }
    case 'ReversalRecorded': {
      const e = ev as Extract<RetractionEvent, { __typename: 'ReversalRecorded' }>;
      if (graph?.has(e.reversal.effect.id)) {
        await step('effects');
        graph.setStatus(e.reversal.effect.id, e.reversal.effect.status);
        graph.addReversal(e.reversal, e.reversal.effect.id, true);
        announce(`Reversal ${e.reversal.status} recorded for ${e.reversal.effect.kind}.`);
      }
      return;
    }
    case 'RetractionCommitted': {
      const e = ev as Extract<RetractionEvent, { __typename: 'RetractionCommitted' }>;
      if (receiptShown?.id === e.retraction.id) showReceipt({ ...receiptShown, totals: e.totals });
      if (graph?.has(e.retraction.root.id)) {
        await step('committed');
        announce(`Retraction of ${e.retraction.root.claimKey} committed: ${e.totals.beliefsRetracted} beliefs retracted.`);
      }
      return;
    }
    default:
      return;
  }
}

function markSearchItem(beliefId: string, status: string): void {
  for (const item of el.searchResults.querySelectorAll<HTMLElement>('[data-testid="belief-item"]')) {
    if (item.dataset.beliefId !== beliefId) continue;
    item.dataset.status = status;
    item.classList.toggle('status-retracted', status === 'RETRACTED');
    const badge = item.querySelector('.badge');
    if (badge) badge.replaceWith(statusBadge(status));
  }
}

function refreshSelectedIf(id: string): void {
  if (selected?.id !== id || !graph) return;
  const node = graph.nodes.get(id);
  if (node) {
    selected = node;
    renderDetail();
  }
}

/** Without the socket's events (disconnected, or an idempotent re-retraction that writes none), apply the receipt. */
function applyRetractionResult(r: RetractionResult): void {
  if (!graph) return;
  for (const { node } of r.beliefs.edges) {
    graph.setStatus(node.id, 'RETRACTED');
    markSearchItem(node.id, 'RETRACTED');
    const d = details.get(node.id);
    if (d) d.status = 'RETRACTED';
  }
  for (const e of r.cancelledEffects ?? []) graph.setStatus(e.id, e.status);
  for (const rev of r.reversals ?? []) graph.addReversal(rev, rev.effect.id);
  if (selected) refreshSelectedIf(selected.id);
}

// ---------------------------------------------------------------- search

async function runSearch(): Promise<void> {
  const seq = ++searchSeq;
  const text = el.searchInput.value.trim();
  const status = (el.searchStatus.value || null) as BeliefStatus | null;
  el.searchResults.setAttribute('aria-busy', 'true');
  try {
    const prefixQuery = gql(BELIEFS, { claimKeyPrefix: text || null, status, first: 25 });
    const textQuery = text
      ? gql(SEARCH, { input: { text, k: 10, includeRetracted: status !== 'ACTIVE' } }).catch((err: unknown) => err as Error)
      : Promise.resolve(null);
    const [prefix, semantic] = await Promise.all([prefixQuery, textQuery]);
    if (seq !== searchSeq) return;
    const items: { belief: BeliefListItem; score?: number }[] = prefix.beliefs.edges.map((e) => ({ belief: e.node }));
    const seen = new Set(items.map((i) => i.belief.id));
    let semanticNote = '';
    if (semantic instanceof Error) {
      semanticNote = ` Text search failed: ${semantic.message}`;
    } else if (semantic) {
      for (const hit of semantic.search.hits) {
        if (status && hit.belief.status !== status) continue;
        if (seen.has(hit.belief.id)) {
          const existing = items.find((i) => i.belief.id === hit.belief.id);
          if (existing) existing.score = hit.score;
          continue;
        }
        seen.add(hit.belief.id);
        items.push({ belief: hit.belief, score: hit.score });
      }
    }
    renderResults(items);
    const prefixCount = prefix.beliefs.totalCount;
    el.searchSummary.textContent = text
      ? `${items.length} shown: ${prefixCount} with claim keys starting “${text}”${semantic && !(semantic instanceof Error) ? `, plus nearest by meaning` : ''}.${semanticNote}`
      : `${items.length} newest of ${prefixCount} beliefs.`;
  } catch (err) {
    if (seq === searchSeq) showError(err);
  } finally {
    if (seq === searchSeq) el.searchResults.removeAttribute('aria-busy');
  }
}

function renderResults(items: { belief: BeliefListItem; score?: number }[]): void {
  clear(el.searchResults);
  if (!items.length) {
    el.searchResults.append(h('li', { className: 'muted' }, 'No beliefs match.'));
    return;
  }
  for (const { belief: b, score } of items) {
    const btn = h(
      'button',
      {
        type: 'button',
        'data-testid': 'belief-item',
        'data-belief-id': b.id,
        'data-claim-key': b.claimKey,
        'data-status': b.status,
        className: `belief-item status-${b.status.toLowerCase()}`,
        onclick: () => void selectRoot(b.id),
      },
      h('span', { className: 'claim' }, breakable(b.claimKey)),
      statusBadge(b.status),
      h('span', { className: 'statement' }, b.statement),
      h(
        'span',
        { className: 'meta muted' },
        `${b.author.name} · ${formatTime(b.createdAt)}${score !== undefined ? ` · similarity ${score.toFixed(2)}` : ''}`,
      ),
    );
    el.searchResults.append(h('li', null, btn));
  }
}

// ---------------------------------------------------------------- graph

async function fetchBelief(id: string): Promise<BeliefDetail | null> {
  const data = await gql(BELIEF_NEIGHBORHOOD, { id, dependentsFirst: DEPENDENTS_PAGE, ...readVars() });
  if (data.belief) details.set(data.belief.id, data.belief);
  return data.belief;
}

function ensureGraph(): GraphView {
  if (!graph) {
    graph = new GraphView({ container: el.graph, list: el.nodeList, onActivate: (n) => select(n) });
  }
  return graph;
}

async function selectRoot(id: string): Promise<void> {
  await loadGraph(id);
}

async function loadGraph(rootId: string): Promise<void> {
  const seq = ++graphSeq;
  const up = Number(el.levelsUp.value);
  const down = Number(el.levelsDown.value);
  el.graph.setAttribute('aria-busy', 'true');
  try {
    const root = await fetchBelief(rootId);
    if (seq !== graphSeq) return;
    if (!root) throw new Error('That belief was not found (it may belong to another fleet).');
    el.graphEmpty.hidden = true;
    const g = ensureGraph();
    g.reset(rootId);
    previewFor = null;
    el.previewPanel.hidden = true;
    const first = g.ingest(root, 0, 'full');
    let expanded = 1;
    const done = new Set([rootId]);

    let frontier: BeliefRef[] = first.dependents;
    for (let depth = 1; depth <= down && frontier.length && expanded < MAX_EXPANDED; depth++) {
      const todo = uniq(frontier.filter((b) => !done.has(b.id))).slice(0, MAX_EXPANDED - expanded);
      todo.forEach((b) => done.add(b.id));
      const fetched = await inChunks(todo, 6, (b) => fetchBelief(b.id));
      if (seq !== graphSeq) return;
      frontier = [];
      for (const d of fetched) {
        if (!d) continue;
        expanded++;
        frontier.push(...g.ingest(d, depth, 'full').dependents);
      }
    }

    frontier = first.premises;
    for (let depth = 1; depth <= up && frontier.length && expanded < MAX_EXPANDED; depth++) {
      const todo = uniq(frontier.filter((b) => !done.has(b.id))).slice(0, MAX_EXPANDED - expanded);
      todo.forEach((b) => done.add(b.id));
      const fetched = await inChunks(todo, 6, (b) => fetchBelief(b.id));
      if (seq !== graphSeq) return;
      frontier = [];
      for (const d of fetched) {
        if (!d) continue;
        expanded++;
        frontier.push(...g.ingest(d, -depth, 'up').premises);
      }
    }

    g.render(true);
    const rootNode = g.nodes.get(rootId)!;
    g.choose(rootId);
    select(rootNode);
    announce(`Graph of ${root.claimKey}: ${g.nodes.size} nodes.`);
  } catch (err) {
    if (seq === graphSeq) showError(err);
  } finally {
    if (seq === graphSeq) el.graph.removeAttribute('aria-busy');
  }
}

function uniq<T extends { id: string }>(xs: T[]): T[] {
  const m = new Map<string, T>();
  for (const x of xs) m.set(x.id, x);
  return [...m.values()];
}

// ---------------------------------------------------------------- selection + detail

function select(node: GraphNode): void {
  const changedBelief = selected?.id !== node.id;
  selected = node;
  if (changedBelief) {
    el.retractNote.textContent = '';
    if (previewFor && previewFor !== node.id) {
      previewFor = null;
      el.previewPanel.hidden = true;
      graph?.setPreview(null);
    }
  }
  renderDetail();
  if (node.kind === 'belief' && !details.has(node.id)) {
    void fetchBelief(node.id)
      .then(() => refreshSelectedIf(node.id))
      .catch(showError);
  }
}

function renderDetail(): void {
  const node = selected;
  if (!node) return;
  const dl = h('dl');
  const parts: (Node | null)[] = [];
  if (node.kind === 'belief') {
    const d = details.get(node.id);
    parts.push(
      h('h3', { className: `claim status-${node.status.toLowerCase()}`, 'data-testid': 'detail-claim-key' }, breakable(node.claimKey)),
      h('p', { className: 'statement' }, node.statement),
    );
    dlRow(dl, 'Status', statusBadge(node.status));
    if (d) {
      dlRow(dl, 'Author', d.author.name);
      dlRow(dl, 'Created', formatTime(d.createdAt));
      if (d.evidence) dlRow(dl, 'Evidence', d.evidence);
      if (d.value !== null && d.value !== undefined) dlRow(dl, 'Value', h('code', null, JSON.stringify(d.value)));
      dlRow(
        dl,
        'Support',
        d.justifications.length
          ? `${d.justifications.length} justification(s), ${d.justifications.filter((j) => j.holds).length} holding`
          : 'premise (no justification)',
      );
      dlRow(dl, 'Dependents', String(d.dependents.totalCount));
      if (d.retractedAt) dlRow(dl, 'Retracted', formatTime(d.retractedAt));
      if (d.retraction) {
        const rid = d.retraction.id;
        dlRow(
          dl,
          'Retraction',
          h(
            'span',
            null,
            `“${d.retraction.reason}” `,
            canReadReceipts() ? h('button', { type: 'button', className: 'link', onclick: () => void loadReceipt(rid) }, 'Show receipt') : null,
          ),
        );
      }
    }
    parts.push(dl);
    if (graph && graph.rootId !== node.id) {
      parts.push(
        h('button', { type: 'button', 'data-testid': 'recenter', onclick: () => void loadGraph(node.id) }, 'Centre graph on this belief'),
      );
    }
  } else if (node.kind === 'effect') {
    parts.push(h('h3', null, `Effect: ${node.effectKind}`));
    dlRow(dl, 'Status', statusBadge(node.status));
    dlRow(dl, 'Amount', node.amount ? formatMoney(node.amount) : 'none');
    if (node.idempotencyKey) dlRow(dl, 'Idempotency key', h('code', null, breakable(node.idempotencyKey)));
    parts.push(dl);
  } else {
    parts.push(h('h3', null, 'Reversal'));
    dlRow(dl, 'Status', statusBadge(node.status));
    dlRow(dl, 'Amount', node.amount ? formatMoney(node.amount) : 'none');
    if (node.idempotencyKey) dlRow(dl, 'Idempotency key', h('code', null, breakable(node.idempotencyKey)));
    parts.push(dl, h('p', { className: 'muted small' }, 'Owed until a provider confirms it with its own reference.'));
  }
  el.detail.replaceChildren(...parts.filter((p): p is Node => p !== null));
  el.detail.dataset.id = node.id;
  el.detail.dataset.kind = node.kind;

  const isBelief = node.kind === 'belief';
  el.actions.hidden = !isBelief;
  if (!isBelief) return;
  const retracted = node.status === 'RETRACTED';
  el.previewButton.disabled = retracted;
  el.previewButton.title = retracted ? 'Already retracted' : '';
  el.retractForm.hidden = !canRetract();
  el.retractButton.disabled = retracted;
  if (retracted && !el.retractNote.textContent) el.retractNote.textContent = 'This belief is already retracted.';
}

// ---------------------------------------------------------------- preview

async function runPreview(): Promise<void> {
  const node = selected;
  if (!node || node.kind !== 'belief' || !graph) return;
  const g = graph;
  el.previewButton.disabled = true;
  el.previewButton.setAttribute('aria-busy', 'true');
  try {
    const first = (await gql(PREVIEW_RETRACTION, { beliefId: node.id, first: 100, after: null, ...readVars() })).previewRetraction;
    const beliefs = [...first.beliefs.edges.map((e) => e.node)];
    let pageInfo = first.beliefs.pageInfo;
    for (let page = 1; pageInfo.hasNextPage && pageInfo.endCursor && page < 10; page++) {
      const next = (await gql(PREVIEW_RETRACTION, { beliefId: node.id, first: 100, after: pageInfo.endCursor, canReadEffects: false, canReadReceipts: false })).previewRetraction;
      beliefs.push(...next.beliefs.edges.map((e) => e.node));
      pageInfo = next.beliefs.pageInfo;
    }
    // Bring every belief in the blast radius and every survivor into the graph, so the halo covers them all.
    const missing = uniq([...beliefs, ...first.survivors]).filter((b) => !g.getBelief(b.id)?.expanded);
    const fetched = await inChunks(missing.slice(0, 40), 6, (b) => fetchBelief(b.id));
    for (const d of fetched) {
      if (!d) continue;
      const premiseDepths = d.justifications.flatMap((j) => j.premises).map((p) => g.nodes.get(p.id)?.depth ?? 0);
      g.ingest(d, premiseDepths.length ? Math.max(...premiseDepths) + 1 : 1, 'full');
    }
    const pending = first.pendingEffects ?? [];
    const executed = first.executedEffects ?? [];
    for (const e of [...pending, ...executed]) {
      if (g.has(e.id)) g.setStatus(e.id, e.status);
    }
    g.render(fetched.length > 0);

    const marks = new Map<string, PreviewMark>();
    for (const b of beliefs) marks.set(b.id, 'retract');
    for (const s of first.survivors) marks.set(s.id, 'survivor');
    for (const e of pending) marks.set(e.id, 'cancel');
    for (const e of executed) marks.set(e.id, 'reach');
    g.setPreview(marks);
    previewFor = node.id;
    renderPreview(first, beliefs);
    announce(
      `Preview: ${first.beliefs.totalCount} beliefs would be retracted, ${first.survivors.length} survive` +
        (first.totals ? `, exposure ${formatMoneyList(first.totals.exposure)}.` : '.'),
    );
  } catch (err) {
    showError(err);
  } finally {
    el.previewButton.removeAttribute('aria-busy');
    el.previewButton.disabled = selected?.kind === 'belief' && selected.status === 'RETRACTED';
  }
}

/** In place of what the viewer's scopes do not open: says which scope would. */
function withheld(testid: string, scope: string): HTMLElement {
  return h('span', { 'data-testid': testid, 'data-withheld': 'true', className: 'muted' }, `needs ${scope}`);
}

function effectList(testid: string, effects: Preview['pendingEffects']): HTMLElement {
  if (!effects) return withheld(testid, 'an effects scope or receipts:read');
  const ul = h('ul', { 'data-testid': testid, className: 'compact' });
  for (const e of effects) {
    ul.append(
      h('li', { 'data-effect-id': e.id, 'data-status': e.status }, `${e.kind}${e.amount ? ` ${formatMoney(e.amount)}` : ''} — ${e.status}`),
    );
  }
  if (!effects.length) ul.append(h('li', { className: 'muted' }, 'none'));
  return ul;
}

function renderPreview(p: Preview, beliefs: BeliefRef[]): void {
  const t = p.totals;
  const dl = h('dl');
  dlRow(dl, 'Beliefs that would be retracted', h('span', { 'data-testid': 'preview-beliefs-count' }, String(p.beliefs.totalCount)));
  dlRow(dl, 'Survivors (another justification holds)', h('span', { 'data-testid': 'preview-survivors-count' }, String(p.survivors.length)));
  const count = (testid: string, list: unknown[] | undefined) =>
    list ? h('span', { 'data-testid': testid }, String(list.length)) : withheld(testid, 'an effects scope or receipts:read');
  dlRow(dl, 'Pending effects cancelled', count('preview-cancel-count', p.pendingEffects));
  dlRow(dl, 'Executed effects reached', count('preview-reach-count', p.executedEffects));
  const cur = t ? currenciesOf(t) : [];
  const money = (testid: string, list: Money[] | undefined) => (t ? moneyEl(testid, list, cur) : withheld(testid, 'receipts:read'));
  dlRow(dl, 'Exposure (executed money reached)', money('preview-exposure', t?.exposure));
  dlRow(dl, 'Owed (reversals to record)', money('preview-owed', t?.owed));
  dlRow(dl, 'Unreachable (no compensation handler)', money('preview-unreachable', t?.unreachableAmount));

  const survivors = h('ul', { 'data-testid': 'preview-survivors', 'data-count': p.survivors.length, className: 'compact' });
  for (const s of p.survivors) survivors.append(h('li', { 'data-belief-id': s.id, 'data-claim-key': s.claimKey }, breakable(s.claimKey)));
  if (!p.survivors.length) survivors.append(h('li', { className: 'muted' }, 'none'));

  const blast = h('ul', { 'data-testid': 'preview-beliefs', className: 'compact' });
  for (const b of beliefs) blast.append(h('li', { 'data-belief-id': b.id, 'data-claim-key': b.claimKey }, breakable(b.claimKey)));

  el.previewPanel.replaceChildren(
    h('h3', null, 'Preview of retracting ', h('code', null, breakable(p.root.claimKey))),
    h('p', { className: 'muted small' }, 'Computed without changing anything.'),
    dl,
    h('h4', null, 'Survivors'),
    survivors,
    h('details', null, h('summary', null, `Blast radius (${beliefs.length} listed)`), blast),
    h('h4', null, 'Pending effects that would be cancelled'),
    effectList('preview-pending-effects', p.pendingEffects),
    h('h4', null, 'Executed effects that would be reached'),
    effectList('preview-executed-effects', p.executedEffects),
    h('button', { type: 'button', className: 'link', 'data-testid': 'preview-clear', onclick: clearPreview }, 'Clear preview'),
  );
  el.previewPanel.dataset.beliefId = p.root.id;
  el.previewPanel.hidden = false;
  revealInColumn(el.previewPanel);
}

function clearPreview(): void {
  previewFor = null;
  el.previewPanel.hidden = true;
  graph?.setPreview(null);
  el.previewButton.focus();
}

// ---------------------------------------------------------------- retract + receipt

async function runRetract(): Promise<void> {
  const node = selected;
  if (!node || node.kind !== 'belief' || !canRetract()) return;
  const reason = el.retractReason.value.trim();
  if (!reason) {
    el.retractNote.textContent = 'A reason is required: it is recorded on the receipt.';
    el.retractReason.setAttribute('aria-invalid', 'true');
    el.retractReason.focus();
    return;
  }
  el.retractReason.removeAttribute('aria-invalid');
  el.retractButton.disabled = true;
  el.retractButton.setAttribute('aria-busy', 'true');
  el.retractNote.textContent = 'Retracting…';
  try {
    const r = (await gql(RETRACT_BELIEF, { input: { beliefId: node.id, reason }, first: 100, ...readVars() })).retractBelief;
    previewFor = null;
    el.previewPanel.hidden = true;
    graph?.setPreview(null);
    el.retractReason.value = '';
    el.retractNote.textContent = `Retracted: ${r.totals.beliefsRetracted} beliefs, ${r.totals.effectsCancelled} effects cancelled, ${r.totals.effectsReached} reached.`;
    showReceipt(r);
    if (!committedSeen.has(r.id)) {
      // The cascade normally arrives over the socket and animates; if it does not come, apply the receipt.
      setTimeout(() => {
        if (!committedSeen.has(r.id)) applyRetractionResult(r);
      }, feed?.state === 'connected' ? 5_000 : 0);
    }
  } catch (err) {
    el.retractNote.textContent = '';
    showError(err);
  } finally {
    el.retractButton.removeAttribute('aria-busy');
    el.retractButton.disabled = selected?.kind === 'belief' && selected.status === 'RETRACTED';
  }
}

async function loadReceipt(id: string): Promise<void> {
  try {
    const data = await gql(RETRACTION_RECEIPT, { id });
    if (!data.retraction) throw new Error('Receipt not found.');
    showReceipt(data.retraction);
  } catch (err) {
    showError(err);
  }
}

function showReceipt(r: ReceiptCore): void {
  const fresh = el.receipt.hidden || el.receipt.dataset.retractionId !== r.id;
  receiptShown = { id: r.id, reason: r.reason, createdAt: r.createdAt, root: r.root, actor: r.actor, totals: r.totals };
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

// ---------------------------------------------------------------- wiring

el.signinForm.addEventListener('submit', (ev) => {
  ev.preventDefault();
  const token = el.tokenInput.value.trim().replace(/^Bearer\s+/i, '');
  if (!token) {
    el.signinError.textContent = 'Paste a token first.';
    el.tokenInput.focus();
    return;
  }
  void signIn(token);
});
el.signOut.addEventListener('click', () => signOut());

let searchTimer: ReturnType<typeof setTimeout> | null = null;
el.searchForm.addEventListener('submit', (ev) => {
  ev.preventDefault();
  if (searchTimer) clearTimeout(searchTimer);
  void runSearch();
});
el.searchInput.addEventListener('input', () => {
  if (searchTimer) clearTimeout(searchTimer);
  searchTimer = setTimeout(() => void runSearch(), 350);
});
el.searchStatus.addEventListener('change', () => void runSearch());

const reload = () => {
  if (graph?.rootId) void loadGraph(graph.rootId);
};
el.levelsUp.addEventListener('change', reload);
el.levelsDown.addEventListener('change', reload);

el.previewButton.addEventListener('click', () => void runPreview());
el.retractForm.addEventListener('submit', (ev) => {
  ev.preventDefault();
  void runRetract();
});

window.addEventListener('resize', () => graph?.resize());

// A test hook: drop the socket as a network failure would, to exercise resume-from-cursor.
(window as unknown as { __retractDashboard: unknown }).__retractDashboard = {
  dropConnection: () => feed?.dropConnection(),
  lastCursor: () => feed?.lastCursor ?? null,
};

const saved = loadToken();
if (saved) void signIn(saved, true);
else el.tokenInput.focus();
