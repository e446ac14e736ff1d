// The derivation graph as a focusable list (data-testid=graph-node-list): the accessible alternative to the canvas,
// holding the same nodes, statuses and preview marks as text.
import { breakable, h } from './dom';
import type { GraphNode, NodeKind, PreviewMark } from './graph-model';
import { formatMoney } from './money';

const STATUS_NOTE: Record<string, string> = {
  RETRACTED: '(retracted)',
  CANCELLED: '(cancelled)',
  UNREACHABLE: '(unreachable)',
  VOIDED: '(voided: no longer owed)',
};

const PREVIEW_TEXT: Record<PreviewMark, string> = {
  retract: 'would be retracted',
  survivor: 'survives (another justification holds)',
  cancel: 'pending: would be cancelled',
  reach: 'executed: would be reached (reversal)',
};

const KIND_RANK: Record<NodeKind, number> = { belief: 0, effect: 1, reversal: 2 };

function listOrder(nodes: Iterable<GraphNode>): GraphNode[] {
  return [...nodes].sort(
    (a, b) =>
      a.depth - b.depth ||
      KIND_RANK[a.kind] - KIND_RANK[b.kind] ||
      (a.kind === 'belief' && b.kind === 'belief' ? a.claimKey.localeCompare(b.claimKey) : a.id.localeCompare(b.id)),
  );
}

function describe(n: GraphNode): { kind: string; title: string; detail: string } {
  switch (n.kind) {
    case 'belief': {
      const where =
        n.role === 'root'
          ? 'root of this graph'
          : n.role === 'premise'
            ? `premise, ${-n.depth} up`
            : n.role === 'dependent'
              ? `dependent, ${n.depth} down`
              : 'other premise of a dependent';
      const more = n.hiddenDependents ? `; ${n.hiddenDependents} more dependents not shown` : '';
      return { kind: 'Belief', title: n.claimKey, detail: `${where}${more} — ${n.statement}` };
    }
    case 'effect':
      return {
        kind: 'Effect',
        title: `${n.effectKind}${n.amount ? ` ${formatMoney(n.amount)}` : ''}`,
        detail: n.idempotencyKey ? `key ${n.idempotencyKey}` : '',
      };
    case 'reversal':
      return {
        kind: 'Reversal',
        title: `reversal${n.amount ? ` ${formatMoney(n.amount)}` : ''}`,
        detail: n.idempotencyKey ? `key ${n.idempotencyKey}` : '',
      };
  }
}

export class GraphNodeList {
  private readonly items = new Map<string, HTMLButtonElement>();

  constructor(
    private readonly list: HTMLElement,
    private readonly onActivate: (id: string) => void,
  ) {
    // Every entry is a button in the tab order; arrows / Home / End also move between entries.
    list.addEventListener('keydown', (ev) => {
      const buttons = [...list.querySelectorAll<HTMLButtonElement>('button[data-testid="graph-node"]')];
      const at = buttons.indexOf(document.activeElement as HTMLButtonElement);
      if (at < 0) return;
      const next =
        ev.key === 'ArrowDown' || ev.key === 'ArrowRight'
          ? at + 1
          : ev.key === 'ArrowUp' || ev.key === 'ArrowLeft'
            ? at - 1
            : ev.key === 'Home'
              ? 0
              : ev.key === 'End'
                ? buttons.length - 1
                : null;
      if (next === null) return;
      ev.preventDefault();
      buttons[Math.max(0, Math.min(buttons.length - 1, next))]?.focus();
    });
  }

  /** Restarts the entry's flash animation (a status the cascade just changed). */
  flash(id: string): void {
    const item = this.items.get(id);
    if (!item) return;
    item.classList.remove('flash');
    void item.offsetWidth; // restart the CSS animation
    item.classList.add('flash');
  }

  choose(id: string | null): void {
    for (const [nid, btn] of this.items) btn.setAttribute('aria-current', nid === id ? 'true' : 'false');
  }

  private fillItem(btn: HTMLButtonElement, n: GraphNode, mark: PreviewMark | undefined, chosenId: string | null): void {
    const d = describe(n);
    btn.dataset.kind = n.kind;
    btn.dataset.id = n.id;
    btn.dataset.status = n.status;
    btn.dataset.depth = String(n.depth);
    if (n.kind === 'belief') btn.dataset.claimKey = n.claimKey;
    if (mark) btn.dataset.preview = mark;
    else delete btn.dataset.preview;
    btn.setAttribute('aria-current', n.id === chosenId ? 'true' : 'false');
    btn.className = `graph-node kind-${n.kind} status-${n.status.toLowerCase()}${mark ? ` pv-${mark}` : ''}`;
    const note = STATUS_NOTE[n.status];
    btn.replaceChildren(
      ...[
        h('span', { className: 'node-kind' }, d.kind),
        h('span', { className: 'node-title' }, breakable(d.title)),
        h('span', { className: 'node-status' }, n.status, note ? ` ${note}` : ''),
        mark ? h('span', { className: 'node-preview' }, PREVIEW_TEXT[mark]) : null,
        d.detail ? h('span', { className: 'node-detail' }, d.detail) : null,
      ].filter((x): x is HTMLSpanElement => x !== null),
    );
  }

  /** Brings the list in line with the nodes, keeping keyboard focus where it was. */
  sync(nodes: Map<string, GraphNode>, preview: Map<string, PreviewMark> | null, chosenId: string | null): void {
    const list = this.list;
    const ordered = listOrder(nodes.values());
    const focused = document.activeElement;
    for (const [id, btn] of this.items) {
      if (!nodes.has(id)) {
        btn.parentElement?.remove();
        this.items.delete(id);
      }
    }
    ordered.forEach((n, i) => {
      let btn = this.items.get(n.id);
      if (!btn) {
        btn = h('button', { type: 'button', 'data-testid': 'graph-node' });
        btn.addEventListener('click', () => this.onActivate(n.id));
        this.items.set(n.id, btn);
        list.appendChild(h('li', null, btn));
      }
      this.fillItem(btn, n, preview?.get(n.id), chosenId);
      const li = btn.parentElement!;
      if (list.children[i] !== li) list.insertBefore(li, list.children[i] ?? null);
    });
    if (focused instanceof HTMLElement && focused !== document.activeElement && focused.isConnected) focused.focus();
  }

  clear(): void {
    this.items.clear();
    this.list.replaceChildren();
  }
}
