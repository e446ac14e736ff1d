// Where the derivation graph's nodes stand on the canvas: a layered layout in which every edge points down.
import type cytoscape from 'cytoscape';
import type { GraphEdge, GraphNode } from './graph-model';

const COL_W = 210;
const ROW_H = 105;

/**
 * Longest-path layering, rows ordered by their parents' positions; sizes the canvas to the layers and fits the
 * view.
 */
export function layOutLayers(
  cy: cytoscape.Core,
  container: HTMLElement,
  nodes: Map<string, GraphNode>,
  edges: Iterable<GraphEdge>,
): void {
  cy.resize();
  const ids = [...nodes.keys()];
  const incoming = new Map<string, string[]>(ids.map((id) => [id, []]));
  for (const e of edges) {
    if (nodes.has(e.source) && incoming.has(e.target)) incoming.get(e.target)!.push(e.source);
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
  const sortKey = (id: string) => {
    const n = nodes.get(id)!;
    return n.kind === 'belief' ? n.claimKey : `~${n.kind}${id}`;
  };
  for (const l of [...rows.keys()].sort((a, b) => a - b)) {
    const row = rows.get(l)!;
    const bary = (id: string) => {
      const ps = (incoming.get(id) ?? []).filter((p) => x.has(p));
      return ps.length ? ps.reduce((s, p) => s + x.get(p)!, 0) / ps.length : 0;
    };
    row.sort((a, b) => bary(a) - bary(b) || sortKey(a).localeCompare(sortKey(b)));
    row.forEach((id, i) => x.set(id, (i - (row.length - 1) / 2) * COL_W));
  }
  // The canvas grows with the number of layers (up to a cap), so a deep cascade is not shrunk to unreadable text.
  // When the widest row is what limits the zoom, a taller canvas would only add empty space.
  const needH = (rows.size - 1) * ROW_H + 58 + 64;
  const needW = (Math.max(...[...rows.values()].map((r) => r.length)) - 1) * COL_W + 184 + 48;
  const widthZoom = Math.min(1, (container.clientWidth || needW) / needW);
  const height = Math.round(Math.min(640, Math.max(300, needH * widthZoom)));
  if (container.style.height !== `${height}px`) {
    container.style.height = `${height}px`;
    cy.resize();
  }
  cy.batch(() => {
    for (const id of ids) cy.getElementById(id).position({ x: x.get(id) ?? 0, y: (layer.get(id) ?? 0) * ROW_H });
  });
  cy.fit(undefined, 24);
  if (cy.zoom() > 1.3) {
    cy.zoom(1.3);
    cy.center();
  }
}
