// Plays a retraction's cascade onto the graph as its events arrive, one depth level at a time, and a reinstatement
// as the same cascade running back: the root returns first, then each reverse-cascade level (a belief returns one
// level after the last premise it needed), then the voided reversals. Without the events, applies a retraction's
// result in one step (a reinstatement's: reinstatement-panel.ts).
import { sleep } from './dom';
import { el } from './elements';
import { refreshSelectedIf } from './graph-panel';
import { announce, showError } from './notices';
import { page } from './page-state';
import { showReceipt } from './receipt-panel';
import { loadReinstatement, reinstatementsCommitted } from './reinstatement-panel';
import { markSearchItem } from './search-panel';
import type { BeliefDetail, BeliefStatus, RetractionEvent, RetractionResult } from './types';

const CASCADE_STEP_MS = 450;
const cascadeQueue: RetractionEvent[] = [];
let cascadeRunning = false;
/** The retraction (or reinstatement) being played and its current phase (depth level, effects, committed); survives idle gaps. */
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
      const key = 'reinstatement' in ev && ev.reinstatement ? `reinstatement:${ev.reinstatement.id}` : ev.retraction.id;
      if (key !== cascadeRetraction) {
        cascadeRetraction = key;
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
      return moveBelief(
        e.belief.id,
        { status: 'RETRACTED' },
        () => step(`belief:${e.depth}`),
        `Depth ${e.depth}: ${e.belief.claimKey} retracted.`,
      );
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
        announce(
          `Retraction of ${e.retraction.root.claimKey} committed: ${e.totals.beliefsRetracted} beliefs retracted.`,
        );
      }
      return;
    }
    case 'BeliefReinstated': {
      const e = ev as Extract<RetractionEvent, { __typename: 'BeliefReinstated' }>;
      const back = { status: 'ACTIVE' as const, retraction: null, retractedAt: null };
      return moveBelief(
        e.belief.id,
        back,
        () => step(`back:${e.depth}`),
        `Back at level ${e.depth}: ${e.belief.claimKey} reinstated.`,
      );
    }
    case 'ReversalVoided': {
      const e = ev as Extract<RetractionEvent, { __typename: 'ReversalVoided' }>;
      if (page.graph?.has(e.reversal.id)) {
        await step('voided');
        page.graph.setStatus(e.reversal.id, 'VOIDED', true);
        announce(`Reversal of ${e.reversal.effect.kind} voided: it no longer needs to move.`);
      }
      return;
    }
    case 'ReinstatementCommitted': {
      const e = ev as Extract<RetractionEvent, { __typename: 'ReinstatementCommitted' }>;
      reinstatementsCommitted.add(e.reinstatement.id);
      if (el.receipt.dataset.reinstatementId === e.reinstatement.id) void loadReinstatement(e.reinstatement.id);
      if (page.graph?.has(e.retraction.root.id)) {
        await step('reinstated');
        announce(
          `Reinstatement of ${e.retraction.root.claimKey} committed: ${e.reinstatement.totals.beliefsReinstated} beliefs back.`,
        );
      }
      return;
    }
    default:
      return;
  }
}

/** One belief's step: its new status everywhere the page holds it, played on the graph after `step` when it is drawn. */
async function moveBelief(
  id: string,
  change: Partial<BeliefDetail> & { status: BeliefStatus },
  step: () => Promise<void>,
  message: string,
): Promise<void> {
  markSearchItem(id, change.status);
  const d = page.details.get(id);
  if (d) Object.assign(d, change);
  if (!page.graph?.has(id)) return;
  await step();
  page.graph.setStatus(id, change.status, true);
  announce(message);
  refreshSelectedIf(id);
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
