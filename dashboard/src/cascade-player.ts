// Plays a retraction's cascade onto the graph as its events arrive, one depth level at a time, and a reinstatement
// as the same cascade running back: the root returns first, then each reverse-cascade level (a belief returns one
// level after the last premise it needed), then the voided reversals. Without the events, applies a retraction's or
// a reinstatement's result in one step. What the search list and the selection show of a change, they draw themselves
// when asked (page-events.ts).
import { sleep } from './dom';
import { el } from './elements';
import { announce, showError } from './notices';
import { ask } from './page-events';
import { page } from './page-state';
import type { BeliefDetail, BeliefStatus, ReinstatementReceipt, RetractionEvent, RetractionResult } from './types';

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
        ask('nodeChanged', e.effect.id);
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
      if (page.receiptShown?.id === e.retraction.id) ask('showReceipt', { ...page.receiptShown, totals: e.totals });
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
      page.reinstatementsSeen.add(e.reinstatement.id);
      if (el.receipt.dataset.reinstatementId === e.reinstatement.id) ask('openReinstatement', e.reinstatement.id);
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
  setBelief(id, change);
  if (!page.graph?.has(id)) return;
  await step();
  page.graph.setStatus(id, change.status, true);
  announce(message);
  ask('nodeChanged', id);
}

/** A belief's new status where the page holds it off the graph: the search list and the fetched details. */
function setBelief(id: string, change: Partial<BeliefDetail> & { status: BeliefStatus }): void {
  ask('beliefStatus', { id, status: change.status });
  const d = page.details.get(id);
  if (d) Object.assign(d, change);
}

/**
 * A retraction's cascade normally arrives over the socket and plays; when its RetractionCommitted event has not come
 * (disconnected, or an idempotent re-retraction that writes none), the receipt is applied in one step.
 */
export function applyRetractionUnlessPlayed(r: RetractionResult): void {
  unlessPlayed(page.committedSeen, r.id, () => {
    const g = page.graph;
    if (!g) return;
    for (const { node } of r.beliefs.edges) {
      g.setStatus(node.id, 'RETRACTED');
      setBelief(node.id, { status: 'RETRACTED' });
    }
    for (const e of r.cancelledEffects ?? []) g.setStatus(e.id, e.status);
    for (const rev of r.reversals ?? []) g.addReversal(rev, rev.effect.id);
    if (page.selected) ask('nodeChanged', page.selected.id);
  });
}

/** The same for a reinstatement: without its events, the receipt's beliefs come back and its reversals are voided at once. */
export function applyReinstatementUnlessPlayed(r: ReinstatementReceipt): void {
  unlessPlayed(page.reinstatementsSeen, r.id, () => {
    const g = page.graph;
    if (!g) return;
    for (const { node } of r.beliefs.edges) {
      g.setStatus(node.id, node.status);
      setBelief(node.id, { status: node.status });
    }
    for (const l of r.moneyLines ?? []) if (l.line === 'VOIDED') g.setStatus(l.reversal.id, 'VOIDED');
    if (page.selected) ask('nodeChanged', page.selected.id);
  });
}

/** Runs `apply` unless the commit event of `id` arrives first: within 5 s on a live socket, at once without one. */
function unlessPlayed(seen: ReadonlySet<string>, id: string, apply: () => void): void {
  if (seen.has(id)) return;
  setTimeout(
    () => {
      if (!seen.has(id)) apply();
    },
    page.feed?.state === 'connected' ? 5_000 : 0,
  );
}
