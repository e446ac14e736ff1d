// Plays a retraction's cascade onto the graph as its events arrive, one depth level at a time; without the events,
// applies a retraction's result in one step.
import { sleep } from './dom';
import { refreshSelectedIf } from './graph-panel';
import { announce, showError } from './notices';
import { page } from './page-state';
import { showReceipt } from './receipt-panel';
import { markSearchItem } from './search-panel';
import type { RetractionEvent, RetractionResult } from './types';

const CASCADE_STEP_MS = 450;
const cascadeQueue: RetractionEvent[] = [];
let cascadeRunning = false;
/** The retraction being played and its current phase (depth level, effects, committed); survives idle gaps. */
let cascadeRetraction: string | null = null;
let cascadePhase: string | null = null;

/** Queues one event of the live feed for playing. */
export function playCascadeEvent(ev: RetractionEvent): void {
  cascadeQueue.push(ev);
  if (!cascadeRunning) void runCascade();
}

/** Plays cascade events onto the graph one depth level at a time (events arrive in commit order). */
async function runCascade(): Promise<void> {
  cascadeRunning = true;
  try {
    while (cascadeQueue.length) {
      const ev = cascadeQueue.shift()!;
      if (ev.retraction.id !== cascadeRetraction) {
        cascadeRetraction = ev.retraction.id;
        cascadePhase = null;
      }
      await applyEvent(ev, async (nextPhase) => {
        if (cascadePhase !== null && cascadePhase !== nextPhase) await sleep(CASCADE_STEP_MS);
        cascadePhase = nextPhase;
      });
    }
  } catch (err) {
    showError(err);
  } finally {
    cascadeRunning = false;
  }
}

async function applyEvent(ev: RetractionEvent, step: (phase: string) => Promise<void>): Promise<void> {
  switch (ev.__typename) {
    case 'BeliefRetracted': {
      const e = ev as Extract<RetractionEvent, { __typename: 'BeliefRetracted' }>;
      markSearchItem(e.belief.id, 'RETRACTED');
      const d = page.details.get(e.belief.id);
      if (d) d.status = 'RETRACTED';
      if (page.graph?.has(e.belief.id)) {
        await step(`belief:${e.depth}`);
        page.graph.setStatus(e.belief.id, 'RETRACTED', true);
        announce(`Depth ${e.depth}: ${e.belief.claimKey} retracted.`);
        refreshSelectedIf(e.belief.id);
      }
      return;
    }
    case 'EffectCancelled': {
      const e = ev as Extract<RetractionEvent, { __typename: 'EffectCancelled' }>;
      if (page.graph?.has(e.effect.id)) {
        await step('effects');
        page.graph.setStatus(e.effect.id, 'CANCELLED', true);
        announce(`Effect ${e.effect.kind} cancelled.`);
        refreshSelectedIf(e.effect.id);
      }
      return;
    }
    case 'ReversalRecorded': {
      const e = ev as Extract<RetractionEvent, { __typename: 'ReversalRecorded' }>;
      if (page.graph?.has(e.reversal.effect.id)) {
        await step('effects');
        page.graph.setStatus(e.reversal.effect.id, e.reversal.effect.status);
        page.graph.addReversal(e.reversal, e.reversal.effect.id, true);
        announce(`Reversal ${e.reversal.status} recorded for ${e.reversal.effect.kind}.`);
      }
      return;
    }
    case 'RetractionCommitted': {
      const e = ev as Extract<RetractionEvent, { __typename: 'RetractionCommitted' }>;
      if (page.receiptShown?.id === e.retraction.id) showReceipt({ ...page.receiptShown, totals: e.totals });
      if (page.graph?.has(e.retraction.root.id)) {
        await step('committed');
        announce(`Retraction of ${e.retraction.root.claimKey} committed: ${e.totals.beliefsRetracted} beliefs retracted.`);
      }
      return;
    }
    default:
      return;
  }
}

/** Without the socket's events (disconnected, or an idempotent re-retraction that writes none), apply the receipt. */
export function applyRetractionResult(r: RetractionResult): void {
  if (!page.graph) return;
  for (const { node } of r.beliefs.edges) {
    page.graph.setStatus(node.id, 'RETRACTED');
    markSearchItem(node.id, 'RETRACTED');
    const d = page.details.get(node.id);
    if (d) d.status = 'RETRACTED';
  }
  for (const e of r.cancelledEffects ?? []) page.graph.setStatus(e.id, e.status);
  for (const rev of r.reversals ?? []) page.graph.addReversal(rev, rev.effect.id);
  if (page.selected) refreshSelectedIf(page.selected.id);
}
