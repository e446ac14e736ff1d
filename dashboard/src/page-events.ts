// What one part of the page asks of another, without importing it. Receipts are opened from the detail, the history,
// the feed, the cascade and the retract form; a status change is played by the cascade and shown by the search list
// and the selection: when each of those imported the panel it asked, the panels imported each other in a loop. Now a
// panel asks here, main.ts wires the one panel that owns that part of the page to answer, and a panel imports only
// what it draws with (dashboard-no-circular in .dependency-cruiser.cjs keeps it so).
import type { BeliefStatus, ReceiptCore } from './types';

/** Each request, what it carries, and who answers it. */
export interface PageRequests {
  /** Load the graph around this belief (graph-panel.ts). */
  openGraph: string;
  /** Read this retraction's receipt and show it (receipt-panel.ts). */
  openReceipt: string;
  /** Show a retraction's receipt already at hand: from the history, the feed, a retraction just made (receipt-panel.ts). */
  showReceipt: ReceiptCore;
  /** Read this reinstatement's receipt and show it (reinstatement-panel.ts). */
  openReinstatement: string;
  /** A belief's status changed: the search results mark it (search-panel.ts). */
  beliefStatus: { id: string; status: BeliefStatus };
  /** A node of the graph changed: the selection is drawn again if it is that node (graph-panel.ts). */
  nodeChanged: string;
  /** A graph finished loading, with its beliefs' creation instants: the time slider takes its range (time-slider.ts). */
  graphLoaded: readonly string[];
}

type Answer<K extends keyof PageRequests> = (detail: PageRequests[K]) => void;
const answers = new Map<keyof PageRequests, (detail: never) => void>();

/** Names the one answer to a request; a second one is a wiring mistake. */
export function answer<K extends keyof PageRequests>(name: K, fn: Answer<K>): void {
  if (answers.has(name)) throw new Error(`page request ${name} already has an answer`);
  answers.set(name, fn as (detail: never) => void);
}

/** Asks the part of the page that answers `name`; a request nobody answers is a wiring mistake, said at once. */
export function ask<K extends keyof PageRequests>(name: K, detail: PageRequests[K]): void {
  const fn = answers.get(name) as Answer<K> | undefined;
  if (!fn) throw new Error(`page request ${name} has no answer (main.ts wires them)`);
  fn(detail);
}
