// The search panel: beliefs by claim-key prefix and, for text, nearest by meaning, each opening its graph.
import { gql } from './api';
import { breakable, clear, formatTime, h } from './dom';
import { el } from './elements';
import { showError } from './notices';
import { BELIEFS, SEARCH } from './operations';
import { ask } from './page-events';
import type { BeliefListItem, BeliefStatus } from './types';
import { statusBadge } from './widgets';

let searchSeq = 0;

export async function runSearch(): Promise<void> {
  const seq = ++searchSeq;
  const text = el.searchInput.value.trim();
  const status = (el.searchStatus.value || null) as BeliefStatus | null;
  el.searchResults.setAttribute('aria-busy', 'true');
  try {
    const prefixQuery = gql(BELIEFS, { claimKeyPrefix: text || null, status, first: 25 });
    const textQuery = text
      ? gql(SEARCH, { input: { text, k: 10, includeRetracted: status !== 'ACTIVE' } }).catch(
          (err: unknown) => err as Error,
        )
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
        onclick: () => ask('openGraph', b.id),
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

export function markSearchItem(beliefId: string, status: string): void {
  for (const item of el.searchResults.querySelectorAll<HTMLElement>('[data-testid="belief-item"]')) {
    if (item.dataset.beliefId !== beliefId) continue;
    item.dataset.status = status;
    item.classList.toggle('status-retracted', status === 'RETRACTED');
    const badge = item.querySelector('.badge');
    if (badge) badge.replaceWith(statusBadge(status));
  }
}
