// The preview panel: what retracting the selected belief would do, computed without changing anything, and marked
// on the graph.
import { gql } from './api';
import { fetchBelief, inChunks, uniq } from './belief-fetch';
import { breakable, h } from './dom';
import { el } from './elements';
import type { PreviewMark } from './graph-model';
import { formatMoney, formatMoneyList } from './money';
import { announce, showError } from './notices';
import { PREVIEW_RETRACTION } from './operations';
import { page } from './page-state';
import { readVars } from './scopes';
import type { BeliefRef, Money, Preview } from './types';
import { currenciesOf, dlRow, moneyEl, revealInColumn } from './widgets';

export async function runPreview(): Promise<void> {
  const node = page.selected;
  if (!node || node.kind !== 'belief' || !page.graph) return;
  const g = page.graph;
  el.previewButton.disabled = true;
  el.previewButton.setAttribute('aria-busy', 'true');
  try {
    const first = (await gql(PREVIEW_RETRACTION, { beliefId: node.id, first: 100, after: null, ...readVars() }))
      .previewRetraction;
    const beliefs = [...first.beliefs.edges.map((e) => e.node)];
    let pageInfo = first.beliefs.pageInfo;
    for (let page = 1; pageInfo.hasNextPage && pageInfo.endCursor && page < 10; page++) {
      const next = (
        await gql(PREVIEW_RETRACTION, {
          beliefId: node.id,
          first: 100,
          after: pageInfo.endCursor,
          canReadEffects: false,
          canReadReceipts: false,
        })
      ).previewRetraction;
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
    page.previewFor = node.id;
    renderPreview(first, beliefs);
    announce(
      `Preview: ${first.beliefs.totalCount} beliefs would be retracted, ${first.survivors.length} survive` +
        (first.totals ? `, exposure ${formatMoneyList(first.totals.exposure)}.` : '.'),
    );
  } catch (err) {
    showError(err);
  } finally {
    el.previewButton.removeAttribute('aria-busy');
    el.previewButton.disabled = page.selected?.kind === 'belief' && page.selected.status === 'RETRACTED';
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
      h(
        'li',
        { 'data-effect-id': e.id, 'data-status': e.status },
        `${e.kind}${e.amount ? ` ${formatMoney(e.amount)}` : ''} — ${e.status}`,
      ),
    );
  }
  if (!effects.length) ul.append(h('li', { className: 'muted' }, 'none'));
  return ul;
}

function renderPreview(p: Preview, beliefs: BeliefRef[]): void {
  const t = p.totals;
  const dl = h('dl');
  dlRow(
    dl,
    'Beliefs that would be retracted',
    h('span', { 'data-testid': 'preview-beliefs-count' }, String(p.beliefs.totalCount)),
  );
  dlRow(
    dl,
    'Survivors (another justification holds)',
    h('span', { 'data-testid': 'preview-survivors-count' }, String(p.survivors.length)),
  );
  const count = (testid: string, list: unknown[] | undefined) =>
    list
      ? h('span', { 'data-testid': testid }, String(list.length))
      : withheld(testid, 'an effects scope or receipts:read');
  dlRow(dl, 'Pending effects cancelled', count('preview-cancel-count', p.pendingEffects));
  dlRow(dl, 'Executed effects reached', count('preview-reach-count', p.executedEffects));
  const cur = t ? currenciesOf(t) : [];
  const money = (testid: string, list: Money[] | undefined) =>
    t ? moneyEl(testid, list, cur) : withheld(testid, 'receipts:read');
  dlRow(dl, 'Exposure (executed money reached)', money('preview-exposure', t?.exposure));
  dlRow(dl, 'Owed (reversals to record)', money('preview-owed', t?.owed));
  dlRow(dl, 'Unreachable (no compensation handler)', money('preview-unreachable', t?.unreachableAmount));

  const survivors = h('ul', {
    'data-testid': 'preview-survivors',
    'data-count': p.survivors.length,
    className: 'compact',
  });
  for (const s of p.survivors)
    survivors.append(h('li', { 'data-belief-id': s.id, 'data-claim-key': s.claimKey }, breakable(s.claimKey)));
  if (!p.survivors.length) survivors.append(h('li', { className: 'muted' }, 'none'));

  const blast = h('ul', { 'data-testid': 'preview-beliefs', className: 'compact' });
  for (const b of beliefs)
    blast.append(h('li', { 'data-belief-id': b.id, 'data-claim-key': b.claimKey }, breakable(b.claimKey)));

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
    h(
      'button',
      { type: 'button', className: 'link', 'data-testid': 'preview-clear', onclick: clearPreview },
      'Clear preview',
    ),
  );
  el.previewPanel.dataset.beliefId = p.root.id;
  el.previewPanel.hidden = false;
  revealInColumn(el.previewPanel);
}

function clearPreview(): void {
  page.previewFor = null;
  el.previewPanel.hidden = true;
  page.graph?.setPreview(null);
  el.previewButton.focus();
}
