import { LEVEL_BATCH } from '../event/tailer';
import { MAX_PAGE } from '../kernel/page';
import { LIMITS } from '../validation';

/**
 * The most items each list field without `first` can hold, by `Type.field`. The cost rule (src/server/cost.ts)
 * counts such a list at this bound, as a connection counts at its `first`, so nesting them multiplies as pages do:
 * `belief { effects { supportedBy { effects … } } }` is refused before anything runs.
 *
 * Three kinds of bound, each true where the list is loaded:
 * - set by an input rule: a justification's premises and an effect's supports are at most what assertBelief and
 *   proposeEffect accept (the same constants);
 * - RELATION lists, which grow with use and nest (a belief's effects, its justifications, …): at most this many
 *   items, enforced where they are loaded (src/api/loaders.ts `listByParent`): a parent with more answers
 *   LIMIT_EXCEEDED for that field rather than an unbounded list;
 * - a receipt's or an event's own lists: one retraction's or one event's parts (an event carries at most
 *   LEVEL_BATCH ids). A receipt's list is counted at one page (MAX_PAGE); it is as long as the retraction it
 *   describes, so it is read whole, and its nesting is what the count bounds.
 */
export const LIST_BOUNDS: Readonly<Record<string, number>> = {
  // Set by input rules.
  'Justification.premises': LIMITS.premisesMax,
  'Effect.supportedBy': LIMITS.supportsMax,
  'Effect.supportAtExecution': LIMITS.supportsMax,
  'SearchResult.hits': 100,
  // Relation lists: enforced at load.
  'Belief.effects': 50,
  'Belief.justifications': 8,
  'Belief.statusHistory': 100,
  'Query.contradictions': MAX_PAGE,
  'Reinstatement.contradictions': MAX_PAGE,
  'Query.effectKinds': 100,
  // A receipt's own lists.
  'Retraction.cancelledEffects': MAX_PAGE,
  'Retraction.reversals': MAX_PAGE,
  'RetractionPreview.survivors': MAX_PAGE,
  'RetractionPreview.pendingEffects': MAX_PAGE,
  'RetractionPreview.executingEffects': MAX_PAGE,
  'RetractionPreview.executedEffects': MAX_PAGE,
  'Reinstatement.restorableEffects': MAX_PAGE,
  'Reinstatement.moneyLines': MAX_PAGE,
  // An event's items.
  'BeliefsRetracted.beliefs': LEVEL_BATCH,
  'BeliefsReinstated.beliefs': LEVEL_BATCH,
  'EffectsCancelled.effects': LEVEL_BATCH,
  'EffectsRestored.effects': LEVEL_BATCH,
  'ReversalsRecorded.reversals': LEVEL_BATCH,
  'ReversalsVoided.reversals': LEVEL_BATCH,
  // A connection's edges: its `first` has counted them already.
  'BeliefConnection.edges': 1,
  'EffectConnection.edges': 1,
  'ReinstatementConnection.edges': 1,
  'RetractionConnection.edges': 1,
  'ReversalConnection.edges': 1,
  // Amounts, one per currency in use: leaves (a Money has two scalar fields and nothing to nest), so their count
  // cannot multiply anything below them; counted as one item each, like a scalar list.
  'OpenMoney.owed': 1,
  'OpenMoney.inFlight': 1,
  'OpenMoney.reexecutionOwed': 1,
  'RetractionTotals.exposure': 1,
  'RetractionTotals.owed': 1,
  'RetractionTotals.settled': 1,
  'RetractionTotals.unreachableAmount': 1,
  'ReinstatementTotals.inFlight': 1,
  'ReinstatementTotals.reexecutionOwed': 1,
  'ReinstatementTotals.voided': 1,
};

/** A list field's bound; a list missing from the table counts at one page (a test keeps the table complete). */
export function listBound(type: string, field: string): number {
  return LIST_BOUNDS[`${type}.${field}`] ?? MAX_PAGE;
}
