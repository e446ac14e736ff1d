// The derivation graph: a model of beliefs / effects / reversals and their edges, drawn twice —
// on a cytoscape canvas (data-testid=graph) and as a focusable list (data-testid=graph-node-list), the
// accessible alternative. Status is carried by text, shape and border pattern as well as colour.
import cytoscape from 'cytoscape';
import { breakable, h } from './dom';
import { formatMoney } from './money';
import type { BeliefDetail, BeliefRef, BeliefStatus, EffectRef, EffectStatus, Money, ReversalRef, ReversalStatus } from './types';

export type NodeKind = 'belief' | 'effect' | 'reversal';
/** What a preview says will happen to a node. */
export type PreviewMark = 'retract' | 'survivor' | 'cancel' | 'reach';

interface NodeBase {
  id: string;
  /** Signed distance from the graph's root along derivations: premises < 0 < dependents. */
  depth: number;
}
/** How a belief relates to the root: on its premise chain, on its dependent chain, or another premise of a dependent. */
export type BeliefRole = 'root' | 'premise' | 'dependent' | 'context';
export interface BeliefNode extends NodeBase {
  kind: 'belief';
  role: BeliefRole;
  status: BeliefStatus;
  claimKey: string;
  statement: string;
  /** Its own neighbourhood was fetched (premises, dependents and effects known). */
  expanded: boolean;
  hiddenDependents: number;
}
export interface EffectNode extends NodeBase {
  kind: 'effect';
  status: EffectStatus;
  effectKind: string;
  amount: Money | null;
  idempotencyKey?: string;
}
export interface ReversalNode extends NodeBase {
  kind: 'reversal';
  status: ReversalStatus;
  amount: Money | null;
  effectId: string;
  idempotencyKey?: string;
}
export type GraphNode = BeliefNode | EffectNode | ReversalNode;

interface GraphEdge {
  id: string;
  source: string;
  target: string;
  type: 'premise' | 'supports' | 'compensates';
  justificationId?: string;
}

const STATUS_NOTE: Record<string, string> = {
  RETRACTED: '(retracted)',
  CANCELLED: '(cancelled)',
  UNREACHABLE: '(unreachable)',
};

const PREVIEW_TEXT: Record<PreviewMark, string> = {
  retract: 'would be retracted',
  survivor: 'survives (another justification holds)',
  cancel: 'pending: would be cancelled',
  reach: 'executed: would be reached (reversal)',
};

const strike = (s: string) => [...s].map((c) => `${c}\u0336`).join('');
const short = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const money = (m: Money | null) => (m ? formatMoney(m) : '');

function canvasLabel(n: GraphNode): string {
  switch (n.kind) {
    case 'belief': {
      // The claim's own name first, its subject (everything up to the last '/') under it, then the status.
      const cut = n.claimKey.lastIndexOf('/', n.claimKey.length - 2) + 1;
      const name = short(n.claimKey.slice(cut), 26);
      const subject = cut > 0 ? `${short(n.claimKey.slice(0, cut), 28)}\n` : '';
      return n.status === 'RETRACTED' ? `${strike(name)}\n${subject}RETRACTED (retracted)` : `${name}\n${subject}${n.status}`;
    }
    case 'effect':
      return `${short(n.effectKind, 18)} ${money(n.amount)}\n${n.status}${n.status === 'CANCELLED' ? ' (cancelled)' : ''}`;
    case 'reversal':
      return `reversal ${money(n.amount)}\n${n.status}`;
  }
}

// Cytoscape styles. Typed loosely: @types/cytoscape does not know underlay-* or every property.
const STYLE = [
  {
    selector: 'node',
    style: {
      label: 'data(label)',
      'text-wrap': 'wrap',
      'text-max-width': '168px',
      'text-overflow-wrap': 'anywhere',
      'text-valign': 'center',
      'text-halign': 'center',
      'font-size': 11,
      'font-family': 'system-ui, sans-serif',
      color: '#1b1f24',
      width: 184,
      height: 58,
      'border-width': 2,
      'border-style': 'solid',
      'transition-property': 'background-color, border-color, underlay-opacity',
      'transition-duration': 0.5,
    },
  },
  { selector: 'node[kind = "belief"]', style: { shape: 'round-rectangle' } },
  { selector: 'node[kind = "effect"]', style: { shape: 'cut-rectangle', width: 170 } },
  { selector: 'node[kind = "reversal"]', style: { shape: 'hexagon', width: 170 } },
  // beliefs
  { selector: 'node[kind = "belief"][status = "ACTIVE"]', style: { 'background-color': '#e3f4e8', 'border-color': '#1e7a3c' } },
  {
    selector: 'node[kind = "belief"][status = "RETRACTED"]',
    style: { 'background-color': '#eeeeee', 'border-color': '#7a7a7a', 'border-style': 'dashed', color: '#555' },
  },
  // effects
  { selector: 'node[kind = "effect"][status = "PENDING"]', style: { 'background-color': '#fff4d6', 'border-color': '#9a6b00' } },
  { selector: 'node[kind = "effect"][status = "EXECUTING"]', style: { 'background-color': '#e2eeff', 'border-color': '#1d5fbf', 'border-style': 'dotted' } },
  { selector: 'node[kind = "effect"][status = "EXECUTED"]', style: { 'background-color': '#d9e4ff', 'border-color': '#1c3d8f', 'border-width': 3 } },
  { selector: 'node[kind = "effect"][status = "CANCELLED"]', style: { 'background-color': '#eeeeee', 'border-color': '#7a7a7a', 'border-style': 'dashed', color: '#555' } },
  { selector: 'node[kind = "effect"][status = "FAILED"]', style: { 'background-color': '#fde3e3', 'border-color': '#a31515', 'border-style': 'double', 'border-width': 4 } },
  // reversals
  { selector: 'node[kind = "reversal"][status = "OWED"]', style: { 'background-color': '#ffe8d4', 'border-color': '#b35300', 'border-style': 'dashed' } },
  { selector: 'node[kind = "reversal"][status = "DISPATCHED"]', style: { 'background-color': '#ffe8d4', 'border-color': '#b35300', 'border-style': 'dotted' } },
  { selector: 'node[kind = "reversal"][status = "CONFIRMED"]', style: { 'background-color': '#dff3df', 'border-color': '#1e7a3c', 'border-style': 'double', 'border-width': 4 } },
  { selector: 'node[kind = "reversal"][status = "FAILED"]', style: { 'background-color': '#fde3e3', 'border-color': '#a31515', 'border-style': 'double', 'border-width': 4 } },
  { selector: 'node[kind = "reversal"][status = "UNREACHABLE"]', style: { 'background-color': '#3a3a3a', 'border-color': '#000', color: '#fff', 'border-style': 'dotted', 'border-width': 3 } },
  // root / selection
  { selector: 'node.root', style: { 'border-width': 4, 'font-weight': 'bold' } },
  { selector: 'node.chosen', style: { 'overlay-color': '#0a58ca', 'overlay-opacity': 0.12, 'overlay-padding': 6 } },
  // preview marks (underlay halo + shape of halo differs per mark)
  { selector: 'node.pv-retract', style: { 'underlay-color': '#d11a1a', 'underlay-opacity': 0.35, 'underlay-padding': 9, 'underlay-shape': 'round-rectangle' } },
  { selector: 'node.pv-survivor', style: { 'underlay-color': '#12a150', 'underlay-opacity': 0.4, 'underlay-padding': 9, 'underlay-shape': 'ellipse' } },
  { selector: 'node.pv-cancel', style: { 'underlay-color': '#e0a800', 'underlay-opacity': 0.45, 'underlay-padding': 9 } },
  { selector: 'node.pv-reach', style: { 'underlay-color': '#7b2cbf', 'underlay-opacity': 0.4, 'underlay-padding': 9 } },
  { selector: 'node.pv-outside', style: { opacity: 0.45 } },
  { selector: 'node.falling', style: { 'underlay-color': '#ff2a2a', 'underlay-opacity': 0.75, 'underlay-padding': 14 } },
  // edges
  {
    selector: 'edge',
    style: {
      width: 2,
      'curve-style': 'bezier',
      'target-arrow-shape': 'triangle',
      'line-color': '#5b6b7b',
      'target-arrow-color': '#5b6b7b',
      'arrow-scale': 1.1,
    },
  },
  { selector: 'edge[type = "supports"]', style: { 'line-color': '#1c3d8f', 'target-arrow-color': '#1c3d8f', 'target-arrow-shape': 'diamond' } },
  { selector: 'edge[type = "compensates"]', style: { 'line-color': '#b35300', 'target-arrow-color': '#b35300', 'line-style': 'dotted' } },
  { selector: 'edge[holds = "no"]', style: { 'line-style': 'dashed', 'line-color': '#b0b0b0', 'target-arrow-color': '#b0b0b0' } },
] as unknown as cytoscape.StylesheetStyle[];

export interface GraphViewOptions {
  container: HTMLElement;
  list: HTMLElement;
  onActivate: (node: GraphNode) => void;
}

export class GraphView {
  readonly nodes = new Map<string, GraphNode>();
  private readonly edges = new Map<string, GraphEdge>();
  private readonly justifications = new Map<string, { beliefId: string; premiseIds: string[] }>();
  private readonly listItems = new Map<string, HTMLButtonElement>();
  private preview: Map<string, PreviewMark> | null = null;
  private cy: cytoscape.Core;
  rootId: string | null = null;
  chosenId: string | null = null;

  constructor(private readonly opts: GraphViewOptions) {
    this.cy = cytoscape({
      container: opts.container,
      style: STYLE,
      minZoom: 0.2,
      maxZoom: 2.5,
      autoungrabify: false,
      boxSelectionEnabled: false,
      selectionType: 'single',
    });
    this.cy.on('tap', 'node', (evt) => {
      const node = this.nodes.get(evt.target.id() as string);
      if (node) this.activate(node);
    });
    // Every entry is a button in the tab order; arrows / Home / End also move between entries.
    opts.list.addEventListener('keydown', (ev) => {
      const buttons = [...opts.list.querySelectorAll<HTMLButtonElement>('button[data-testid="graph-node"]')];
      const at = buttons.indexOf(document.activeElement as HTMLButtonElement);
      if (at < 0) return;
      const next =
        ev.key === 'ArrowDown' || ev.key === 'ArrowRight' ? at + 1
        : ev.key === 'ArrowUp' || ev.key === 'ArrowLeft' ? at - 1
        : ev.key === 'Home' ? 0
        : ev.key === 'End' ? buttons.length - 1
        : null;
      if (next === null) return;
      ev.preventDefault();
      buttons[Math.max(0, Math.min(buttons.length - 1, next))]?.focus();
    });
  }

  // ------------------------------------------------------------------ model

  reset(rootId: string): void {
    this.nodes.clear();
    this.edges.clear();
    this.justifications.clear();
    this.preview = null;
    this.rootId = rootId;
    this.chosenId = rootId;
  }

  has(id: string): boolean {
    return this.nodes.has(id);
  }

  getBelief(id: string): BeliefNode | undefined {
    const n = this.nodes.get(id);
    return n?.kind === 'belief' ? n : undefined;
  }

  /** Adds a belief known only by reference (a premise or dependent whose own neighbourhood is not loaded). */
  private stub(ref: BeliefRef, depth: number, role: BeliefRole): BeliefNode {
    const existing = this.nodes.get(ref.id);
    if (existing?.kind === 'belief') {
      existing.status = ref.status;
      existing.claimKey = ref.claimKey;
      existing.statement = ref.statement;
      // A belief first seen as context may turn out to be on the root's own chains.
      if (existing.role === 'context' && role !== 'context') {
        existing.role = role;
        existing.depth = depth;
      }
      return existing;
    }
    const node: BeliefNode = {
      kind: 'belief',
      role: ref.id === this.rootId ? 'root' : role,
      id: ref.id,
      status: ref.status,
      claimKey: ref.claimKey,
      statement: ref.statement,
      depth,
      expanded: false,
      hiddenDependents: 0,
    };
    this.nodes.set(ref.id, node);
    return node;
  }

  private edge(e: GraphEdge): void {
    this.edges.set(e.id, e);
  }

  /**
   * Merges one belief's neighbourhood (from BeliefNeighborhood) at the given depth and returns its dependents and
   * premises. In 'up' mode (walking towards premises) dependents not already drawn are left out, so a widely
   * used premise does not drag every sibling into the picture.
   */
  ingest(detail: BeliefDetail, depth: number, mode: 'full' | 'up' = 'full'): { dependents: BeliefRef[]; premises: BeliefRef[] } {
    const node = this.stub(detail, depth, mode === 'up' ? 'premise' : 'dependent');
    node.expanded = true;
    // Premises of the root and of premises are its premise chain; other premises of dependents are context.
    const premiseRole: BeliefRole = node.role === 'root' || node.role === 'premise' ? 'premise' : 'context';
    const premises: BeliefRef[] = [];
    for (const j of detail.justifications) {
      this.justifications.set(j.id, { beliefId: detail.id, premiseIds: j.premises.map((p) => p.id) });
      for (const p of j.premises) {
        premises.push(p);
        this.stub(p, depth - 1, premiseRole);
        this.edge({ id: `j:${j.id}:${p.id}`, source: p.id, target: detail.id, type: 'premise', justificationId: j.id });
      }
    }
    const all = detail.dependents.edges.map((e) => e.node);
    const dependents = mode === 'up' ? all.filter((d) => this.nodes.has(d.id)) : all;
    node.hiddenDependents = Math.max(0, detail.dependents.totalCount - dependents.length);
    for (const d of dependents) {
      this.stub(d, depth + 1, 'dependent');
      // The dependent's own justifications name the exact justification; until it is expanded, a plain edge.
      const hasJustifiedEdge = [...this.edges.values()].some(
        (e) => e.type === 'premise' && e.source === detail.id && e.target === d.id && e.justificationId,
      );
      if (!hasJustifiedEdge) this.edge({ id: `d:${detail.id}:${d.id}`, source: detail.id, target: d.id, type: 'premise' });
    }
    for (const eff of detail.effects ?? []) this.upsertEffect(eff, detail.id, depth);
    // Once a belief is expanded its justification edges are authoritative: drop the plain placeholder edges.
    for (const j of detail.justifications) {
      for (const p of j.premises) this.edges.delete(`d:${p.id}:${detail.id}`);
    }
    return { dependents, premises };
  }

  upsertEffect(eff: EffectRef, supportingBeliefId: string | null, depth: number): EffectNode {
    let node = this.nodes.get(eff.id) as EffectNode | undefined;
    if (!node || node.kind !== 'effect') {
      node = { kind: 'effect', id: eff.id, status: eff.status, effectKind: eff.kind, amount: eff.amount, depth: depth + 0.5 };
      this.nodes.set(eff.id, node);
    }
    node.status = eff.status;
    node.effectKind = eff.kind;
    node.amount = eff.amount ?? node.amount;
    if (eff.idempotencyKey) node.idempotencyKey = eff.idempotencyKey;
    if (supportingBeliefId) {
      this.edge({ id: `s:${supportingBeliefId}:${eff.id}`, source: supportingBeliefId, target: eff.id, type: 'supports' });
    }
    if (eff.reversal) this.upsertReversal(eff.reversal, eff.id);
    return node;
  }

  upsertReversal(rev: ReversalRef, effectId: string): ReversalNode | undefined {
    const effect = this.nodes.get(effectId);
    if (!effect) return undefined;
    let node = this.nodes.get(rev.id) as ReversalNode | undefined;
    if (!node || node.kind !== 'reversal') {
      node = { kind: 'reversal', id: rev.id, status: rev.status, amount: rev.amount, effectId, depth: effect.depth + 0.25 };
      this.nodes.set(rev.id, node);
    }
    node.status = rev.status;
    node.amount = rev.amount ?? node.amount;
    node.idempotencyKey = rev.idempotencyKey;
    this.edge({ id: `r:${effectId}:${rev.id}`, source: effectId, target: rev.id, type: 'compensates' });
    return node;
  }

  // ------------------------------------------------------------------ live changes

  /** Applies a status change from the cascade; `animate` flashes the node on the canvas and in the list. */
  setStatus(id: string, status: string, animate = false): boolean {
    const node = this.nodes.get(id);
    if (!node) return false;
    if (node.status === status && !animate) return true;
    (node as { status: string }).status = status;
    this.syncCanvas(false);
    this.syncList();
    if (animate) {
      this.cy.getElementById(id).flashClass('falling', 900);
      const item = this.listItems.get(id);
      if (item) {
        item.classList.remove('flash');
        void item.offsetWidth; // restart the CSS animation
        item.classList.add('flash');
      }
    }
    return true;
  }

  addReversal(rev: ReversalRef, effectId: string, animate = false): boolean {
    const added = this.upsertReversal(rev, effectId);
    if (!added) return false;
    this.render(false);
    if (animate) this.cy.getElementById(rev.id).flashClass('falling', 900);
    return true;
  }

  setPreview(marks: Map<string, PreviewMark> | null): void {
    this.preview = marks;
    this.syncCanvas(false);
    this.syncList();
  }

  choose(id: string | null): void {
    this.chosenId = id;
    this.cy.nodes().removeClass('chosen');
    if (id) this.cy.getElementById(id).addClass('chosen');
    for (const [nid, btn] of this.listItems) btn.setAttribute('aria-current', nid === id ? 'true' : 'false');
  }

  private activate(node: GraphNode): void {
    this.choose(node.id);
    this.opts.onActivate(node);
  }

  // ------------------------------------------------------------------ drawing

  render(relayout = true): void {
    this.syncCanvas(relayout);
    this.syncList();
  }

  private justificationHolds(jid: string | undefined): boolean {
    if (!jid) return true;
    const j = this.justifications.get(jid);
    if (!j) return true;
    return j.premiseIds.every((p) => this.getBelief(p)?.status !== 'RETRACTED');
  }

  private edgeHolds(e: GraphEdge): boolean {
    if (e.type !== 'premise') return true;
    if (e.justificationId) return this.justificationHolds(e.justificationId);
    return this.getBelief(e.source)?.status !== 'RETRACTED';
  }

  private classesFor(n: GraphNode): string[] {
    const classes: string[] = [];
    if (n.id === this.rootId) classes.push('root');
    if (n.id === this.chosenId) classes.push('chosen');
    if (this.preview) {
      const mark = this.preview.get(n.id);
      classes.push(mark ? `pv-${mark}` : 'pv-outside');
    }
    return classes;
  }

  private syncCanvas(relayout: boolean): void {
    const cy = this.cy;
    let added = false;
    cy.batch(() => {
      for (const el of cy.elements()) {
        const id = el.id();
        if (el.isNode() ? !this.nodes.has(id) : !this.edges.has(id)) el.remove();
      }
      for (const n of this.nodes.values()) {
        const data = { id: n.id, kind: n.kind, status: n.status, label: canvasLabel(n) };
        const existing = cy.getElementById(n.id);
        if (existing.nonempty()) {
          existing.data(data);
        } else {
          cy.add({ group: 'nodes', data });
          added = true;
        }
        cy.getElementById(n.id).classes(this.classesFor(n));
      }
      for (const e of this.edges.values()) {
        if (!this.nodes.has(e.source) || !this.nodes.has(e.target)) continue;
        const data = { id: e.id, source: e.source, target: e.target, type: e.type, holds: this.edgeHolds(e) ? 'yes' : 'no' };
        const existing = cy.getElementById(e.id);
        if (existing.nonempty()) existing.data(data);
        else {
          cy.add({ group: 'edges', data });
          added = true;
        }
      }
    });
    if (relayout || added) this.layout();
  }

  /** Layered layout: every edge points down (longest-path layering), rows ordered by parents' positions. */
  private layout(): void {
    const cy = this.cy;
    cy.resize();
    const ids = [...this.nodes.keys()];
    const incoming = new Map<string, string[]>(ids.map((id) => [id, []]));
    for (const e of this.edges.values()) {
      if (this.nodes.has(e.source) && incoming.has(e.target)) incoming.get(e.target)!.push(e.source);
    }
    const layer = new Map<string, number>();
    const visiting = new Set<string>();
    const layerOf = (id: string): number => {
      const known = layer.get(id);
      if (known !== undefined) return known;
      if (visiting.has(id)) return 0; // the graph is acyclic; guard anyway
      visiting.add(id);
      const parents = incoming.get(id) ?? [];
      const l = parents.length ? Math.max(...parents.map(layerOf)) + 1 : 0;
      visiting.delete(id);
      layer.set(id, l);
      return l;
    };
    ids.forEach(layerOf);
    const rows = new Map<number, string[]>();
    for (const id of ids) {
      const l = layer.get(id)!;
      if (!rows.has(l)) rows.set(l, []);
      rows.get(l)!.push(id);
    }
    const x = new Map<string, number>();
    const colW = 210;
    const rowH = 105;
    const sortKey = (id: string) => {
      const n = this.nodes.get(id)!;
      return n.kind === 'belief' ? n.claimKey : `~${n.kind}${id}`;
    };
    for (const l of [...rows.keys()].sort((a, b) => a - b)) {
      const row = rows.get(l)!;
      const bary = (id: string) => {
        const ps = (incoming.get(id) ?? []).filter((p) => x.has(p));
        return ps.length ? ps.reduce((s, p) => s + x.get(p)!, 0) / ps.length : 0;
      };
      row.sort((a, b) => bary(a) - bary(b) || sortKey(a).localeCompare(sortKey(b)));
      row.forEach((id, i) => x.set(id, (i - (row.length - 1) / 2) * colW));
    }
    // The canvas grows with the number of layers (up to a cap), so a deep cascade is not shrunk to unreadable text.
    // When the widest row is what limits the zoom, a taller canvas would only add empty space.
    const needH = (rows.size - 1) * rowH + 58 + 64;
    const needW = (Math.max(...[...rows.values()].map((r) => r.length)) - 1) * colW + 184 + 48;
    const widthZoom = Math.min(1, (this.opts.container.clientWidth || needW) / needW);
    const height = Math.round(Math.min(640, Math.max(300, needH * widthZoom)));
    if (this.opts.container.style.height !== `${height}px`) {
      this.opts.container.style.height = `${height}px`;
      cy.resize();
    }
    cy.batch(() => {
      for (const id of ids) cy.getElementById(id).position({ x: x.get(id) ?? 0, y: (layer.get(id) ?? 0) * rowH });
    });
    cy.fit(undefined, 24);
    if (cy.zoom() > 1.3) {
      cy.zoom(1.3);
      cy.center();
    }
  }

  private listOrder(): GraphNode[] {
    const kindRank: Record<NodeKind, number> = { belief: 0, effect: 1, reversal: 2 };
    return [...this.nodes.values()].sort(
      (a, b) =>
        a.depth - b.depth ||
        kindRank[a.kind] - kindRank[b.kind] ||
        (a.kind === 'belief' && b.kind === 'belief' ? a.claimKey.localeCompare(b.claimKey) : a.id.localeCompare(b.id)),
    );
  }

  private describe(n: GraphNode): { kind: string; title: string; detail: string } {
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

  private fillItem(btn: HTMLButtonElement, n: GraphNode): void {
    const d = this.describe(n);
    const mark = this.preview?.get(n.id);
    btn.dataset.kind = n.kind;
    btn.dataset.id = n.id;
    btn.dataset.status = n.status;
    btn.dataset.depth = String(n.depth);
    if (n.kind === 'belief') btn.dataset.claimKey = n.claimKey;
    if (mark) btn.dataset.preview = mark;
    else delete btn.dataset.preview;
    btn.setAttribute('aria-current', n.id === this.chosenId ? 'true' : 'false');
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

  private syncList(): void {
    const list = this.opts.list;
    const ordered = this.listOrder();
    const focused = document.activeElement;
    for (const [id, btn] of this.listItems) {
      if (!this.nodes.has(id)) {
        btn.parentElement?.remove();
        this.listItems.delete(id);
      }
    }
    ordered.forEach((n, i) => {
      let btn = this.listItems.get(n.id);
      if (!btn) {
        btn = h('button', { type: 'button', 'data-testid': 'graph-node' });
        btn.addEventListener('click', () => {
          const node = this.nodes.get(n.id);
          if (node) this.activate(node);
        });
        this.listItems.set(n.id, btn);
        list.appendChild(h('li', null, btn));
      }
      this.fillItem(btn, n);
      const li = btn.parentElement!;
      if (list.children[i] !== li) list.insertBefore(li, list.children[i] ?? null);
    });
    if (focused instanceof HTMLElement && focused !== document.activeElement && focused.isConnected) focused.focus();
  }

  clearAll(): void {
    this.nodes.clear();
    this.edges.clear();
    this.justifications.clear();
    this.listItems.clear();
    this.opts.list.replaceChildren();
    this.cy.elements().remove();
    this.opts.container.style.height = '';
    this.rootId = null;
    this.chosenId = null;
    this.preview = null;
  }

  resize(): void {
    this.cy.resize();
    this.cy.fit(undefined, 24);
  }

  destroy(): void {
    this.cy.destroy();
  }
}
