// What the page holds between events: who is signed in, the live feed, the graph and what is selected on it.
import type { GraphNode } from './graph-model';
import type { GraphView } from './graph-view';
import type { LiveFeed } from './live';
import type { BeliefDetail, ReceiptCore, Viewer } from './types';

export const page = {
  viewer: null as Viewer | null,
  feed: null as LiveFeed | null,
  graph: null as GraphView | null,
  /** Every belief neighbourhood fetched since the graph was last loaded, by id. */
  details: new Map<string, BeliefDetail>(),
  selected: null as GraphNode | null,
  /** The belief whose preview is marked on the graph. */
  previewFor: null as string | null,
  receiptShown: null as ReceiptCore | null,
  /** Retractions whose RetractionCommitted event has arrived over the socket. */
  committedSeen: new Set<string>(),
  /** Reinstatements whose ReinstatementCommitted event has arrived over the socket. */
  reinstatementsSeen: new Set<string>(),
};
