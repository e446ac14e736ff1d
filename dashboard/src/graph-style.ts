// How the derivation graph looks on the cytoscape canvas: each node's label and the stylesheet. Status is carried by
// text, shape and border pattern as well as colour.
import type cytoscape from 'cytoscape';
import type { GraphNode } from './graph-model';
import { formatMoney } from './money';
import type { Money } from './types';

const strike = (s: string) => [...s].map((c) => `${c}\u0336`).join('');
const short = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const money = (m: Money | null) => (m ? formatMoney(m) : '');

export function canvasLabel(n: GraphNode): string {
  switch (n.kind) {
    case 'belief': {
      // The claim's own name first, its subject (everything up to the last '/') under it, then the status.
      const cut = n.claimKey.lastIndexOf('/', n.claimKey.length - 2) + 1;
      const name = short(n.claimKey.slice(cut), 26);
      const subject = cut > 0 ? `${short(n.claimKey.slice(0, cut), 28)}\n` : '';
      return n.status === 'RETRACTED'
        ? `${strike(name)}\n${subject}RETRACTED (retracted)`
        : `${name}\n${subject}${n.status}`;
    }
    case 'effect':
      return `${short(n.effectKind, 18)} ${money(n.amount)}\n${n.status}${n.status === 'CANCELLED' ? ' (cancelled)' : ''}`;
    case 'reversal':
      return `reversal ${money(n.amount)}\n${n.status}`;
  }
}

// Cytoscape styles. Typed loosely: @types/cytoscape does not know underlay-* or every property.
export const GRAPH_STYLE = [
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
  {
    selector: 'node[kind = "belief"][status = "ACTIVE"]',
    style: { 'background-color': '#e3f4e8', 'border-color': '#1e7a3c' },
  },
  {
    selector: 'node[kind = "belief"][status = "RETRACTED"]',
    style: { 'background-color': '#eeeeee', 'border-color': '#7a7a7a', 'border-style': 'dashed', color: '#555' },
  },
  // effects
  { selector: 'node[kind = "belief"][status = "NOT_YET"]', style: { opacity: 0.3, 'border-style': 'dotted' } },
  {
    selector: 'node[kind = "effect"][status = "PENDING"]',
    style: { 'background-color': '#fff4d6', 'border-color': '#9a6b00' },
  },
  {
    selector: 'node[kind = "effect"][status = "EXECUTING"]',
    style: { 'background-color': '#e2eeff', 'border-color': '#1d5fbf', 'border-style': 'dotted' },
  },
  {
    selector: 'node[kind = "effect"][status = "EXECUTED"]',
    style: { 'background-color': '#d9e4ff', 'border-color': '#1c3d8f', 'border-width': 3 },
  },
  {
    selector: 'node[kind = "effect"][status = "CANCELLED"]',
    style: { 'background-color': '#eeeeee', 'border-color': '#7a7a7a', 'border-style': 'dashed', color: '#555' },
  },
  {
    selector: 'node[kind = "effect"][status = "FAILED"]',
    style: { 'background-color': '#fde3e3', 'border-color': '#a31515', 'border-style': 'double', 'border-width': 4 },
  },
  // reversals
  {
    selector: 'node[kind = "reversal"][status = "OWED"]',
    style: { 'background-color': '#ffe8d4', 'border-color': '#b35300', 'border-style': 'dashed' },
  },
  {
    selector: 'node[kind = "reversal"][status = "DISPATCHED"]',
    style: { 'background-color': '#ffe8d4', 'border-color': '#b35300', 'border-style': 'dotted' },
  },
  {
    selector: 'node[kind = "reversal"][status = "CONFIRMED"]',
    style: { 'background-color': '#dff3df', 'border-color': '#1e7a3c', 'border-style': 'double', 'border-width': 4 },
  },
  {
    selector: 'node[kind = "reversal"][status = "FAILED"]',
    style: { 'background-color': '#fde3e3', 'border-color': '#a31515', 'border-style': 'double', 'border-width': 4 },
  },
  {
    selector: 'node[kind = "reversal"][status = "VOIDED"]',
    style: { 'background-color': '#f4f4f4', 'border-color': '#9a9a9a', 'border-style': 'dashed', color: '#777' },
  },
  {
    selector: 'node[kind = "reversal"][status = "UNREACHABLE"]',
    style: {
      'background-color': '#3a3a3a',
      'border-color': '#000',
      color: '#fff',
      'border-style': 'dotted',
      'border-width': 3,
    },
  },
  // root / selection
  { selector: 'node.root', style: { 'border-width': 4, 'font-weight': 'bold' } },
  { selector: 'node.chosen', style: { 'overlay-color': '#0a58ca', 'overlay-opacity': 0.12, 'overlay-padding': 6 } },
  // preview marks (underlay halo + shape of halo differs per mark)
  {
    selector: 'node.pv-retract',
    style: {
      'underlay-color': '#d11a1a',
      'underlay-opacity': 0.35,
      'underlay-padding': 9,
      'underlay-shape': 'round-rectangle',
    },
  },
  {
    selector: 'node.pv-survivor',
    style: { 'underlay-color': '#12a150', 'underlay-opacity': 0.4, 'underlay-padding': 9, 'underlay-shape': 'ellipse' },
  },
  {
    selector: 'node.pv-cancel',
    style: { 'underlay-color': '#e0a800', 'underlay-opacity': 0.45, 'underlay-padding': 9 },
  },
  { selector: 'node.pv-reach', style: { 'underlay-color': '#7b2cbf', 'underlay-opacity': 0.4, 'underlay-padding': 9 } },
  { selector: 'node.pv-outside', style: { opacity: 0.45 } },
  {
    selector: 'node.falling',
    style: { 'underlay-color': '#ff2a2a', 'underlay-opacity': 0.75, 'underlay-padding': 14 },
  },
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
  {
    selector: 'edge[type = "supports"]',
    style: { 'line-color': '#1c3d8f', 'target-arrow-color': '#1c3d8f', 'target-arrow-shape': 'diamond' },
  },
  {
    selector: 'edge[type = "compensates"]',
    style: { 'line-color': '#b35300', 'target-arrow-color': '#b35300', 'line-style': 'dotted' },
  },
  {
    selector: 'edge[holds = "no"]',
    style: { 'line-style': 'dashed', 'line-color': '#b0b0b0', 'target-arrow-color': '#b0b0b0' },
  },
] as unknown as cytoscape.StylesheetStyle[];
