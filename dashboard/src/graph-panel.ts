// The graph panel: loads a belief's neighbourhood levels up and down into the graph, and selects a node on it.
import { fetchBelief, inChunks, uniq } from './belief-fetch';
import { renderDetail } from './detail-panel';
import { el } from './elements';
import type { GraphNode } from './graph-model';
import { GraphView } from './graph-view';
import { announce, showError } from './notices';
import { ask } from './page-events';
import { page } from './page-state';
import type { BeliefRef } from './types';

const MAX_EXPANDED = 120;
let graphSeq = 0;

function ensureGraph(): GraphView {
  if (!page.graph) {
    page.graph = new GraphView({ container: el.graph, list: el.graphNodeList, onActivate: (n) => select(n) });
  }
  return page.graph;
}

export async function loadGraph(rootId: string): Promise<void> {
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
    page.previewFor = null;
    el.previewPanel.hidden = true;
    const first = g.ingest(root, 0, 'full');
    let expanded = 1;
    const done = new Set([rootId]);

    // One direction level by level: dependents downwards, premises upwards; false once a newer load took over.
    const walk = async (start: BeliefRef[], levels: number, direction: 1 | -1): Promise<boolean> => {
      let frontier = start;
      for (let depth = 1; depth <= levels && frontier.length && expanded < MAX_EXPANDED; depth++) {
        const todo = uniq(frontier.filter((b) => !done.has(b.id))).slice(0, MAX_EXPANDED - expanded);
        todo.forEach((b) => done.add(b.id));
        const fetched = await inChunks(todo, 6, (b) => fetchBelief(b.id));
        if (seq !== graphSeq) return false;
        frontier = [];
        for (const d of fetched) {
          if (!d) continue;
          expanded++;
          const next = g.ingest(d, direction * depth, direction > 0 ? 'full' : 'up');
          frontier.push(...(direction > 0 ? next.dependents : next.premises));
        }
      }
      return true;
    };
    if (!(await walk(first.dependents, down, 1))) return;
    if (!(await walk(first.premises, up, -1))) return;

    g.render(true);
    ask(
      'graphLoaded',
      [...page.details.values()].filter((d) => g.has(d.id)).map((d) => d.createdAt),
    );
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

function select(node: GraphNode): void {
  const changedBelief = page.selected?.id !== node.id;
  page.selected = node;
  if (changedBelief) {
    el.retractNote.textContent = '';
    if (page.previewFor && page.previewFor !== node.id) {
      page.previewFor = null;
      el.previewPanel.hidden = true;
      page.graph?.setPreview(null);
    }
  }
  renderDetail();
  if (node.kind === 'belief' && !page.details.has(node.id)) {
    void fetchBelief(node.id)
      .then(() => refreshSelectedIf(node.id))
      .catch(showError);
  }
}

export function refreshSelectedIf(id: string): void {
  if (page.selected?.id !== id || !page.graph) return;
  const node = page.graph.nodes.get(id);
  if (node) {
    page.selected = node;
    renderDetail();
  }
}
