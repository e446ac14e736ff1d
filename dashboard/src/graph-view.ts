// The derivation graph on the page, drawn twice: on a cytoscape canvas (data-testid=graph) and as a focusable list
// (data-testid=graph-node-list), the accessible alternative. The model it draws is graph-model.ts.
import cytoscape from 'cytoscape';
import { layOutLayers } from './graph-layout';
import { GraphModel, type GraphNode, type PreviewMark } from './graph-model';
import { GraphNodeList } from './graph-node-list';
import { canvasLabel, GRAPH_STYLE } from './graph-style';
import type { ReversalRef } from './types';

interface GraphViewOptions {
  container: HTMLElement;
  list: HTMLElement;
  onActivate: (node: GraphNode) => void;
}

export class GraphView extends GraphModel {
  private readonly list: GraphNodeList;
  private preview: Map<string, PreviewMark> | null = null;
  private cy: cytoscape.Core;
  private chosenId: string | null = null;

  constructor(private readonly opts: GraphViewOptions) {
    super();
    this.cy = cytoscape({
      container: opts.container,
      style: GRAPH_STYLE,
      minZoom: 0.2,
      maxZoom: 2.5,
      autoungrabify: false,
      boxSelectionEnabled: false,
      selectionType: 'single',
    });
    this.cy.on('tap', 'node', (evt) => this.activate(evt.target.id() as string));
    this.list = new GraphNodeList(opts.list, (id) => this.activate(id));
  }

  override reset(rootId: string): void {
    super.reset(rootId);
    this.preview = null;
    this.chosenId = rootId;
  }

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
      this.list.flash(id);
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
    this.list.choose(id);
  }

  private activate(id: string): void {
    const node = this.nodes.get(id);
    if (!node) return;
    this.choose(node.id);
    this.opts.onActivate(node);
  }

  render(relayout = true): void {
    this.syncCanvas(relayout);
    this.syncList();
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
        const data = {
          id: e.id,
          source: e.source,
          target: e.target,
          type: e.type,
          holds: this.edgeHolds(e) ? 'yes' : 'no',
        };
        const existing = cy.getElementById(e.id);
        if (existing.nonempty()) existing.data(data);
        else {
          cy.add({ group: 'edges', data });
          added = true;
        }
      }
    });
    if (relayout || added) layOutLayers(cy, this.opts.container, this.nodes, this.edges.values());
  }

  private syncList(): void {
    this.list.sync(this.nodes, this.preview, this.chosenId);
  }

  clearAll(): void {
    this.clearModel();
    this.list.clear();
    this.cy.elements().remove();
    this.opts.container.style.height = '';
    this.chosenId = null;
    this.preview = null;
  }

  resize(): void {
    this.cy.resize();
    this.cy.fit(undefined, 24);
  }
}
