// Result shapes of the documents in operations.ts, read off the documents themselves (gql.tada infers
// them from the schema): the names below are what the page's code calls them.
import type { ResultOf } from '../../src/client';
import type * as Op from './operations';

type BeliefsData = ResultOf<typeof Op.BELIEFS>;
type NeighborhoodData = ResultOf<typeof Op.BELIEF_NEIGHBORHOOD>;
type PreviewData = ResultOf<typeof Op.PREVIEW_RETRACTION>;
type RetractData = ResultOf<typeof Op.RETRACT_BELIEF>;
type ReceiptData = ResultOf<typeof Op.RETRACTION_RECEIPT>;

export type Viewer = ResultOf<typeof Op.VIEWER>['viewer'];
export type BeliefListItem = BeliefsData['beliefs']['edges'][number]['node'];
export type BeliefDetail = NonNullable<NeighborhoodData['belief']>;
export type BeliefRef = BeliefDetail['dependents']['edges'][number]['node'];
export type BeliefStatus = BeliefRef['status'];
export type Preview = PreviewData['previewRetraction'];
export type Totals = NonNullable<Preview['totals']>;
export type Money = Totals['exposure'][number];
export type RetractionResult = RetractData['retractBelief'];
export type ReceiptCore = NonNullable<ReceiptData['retraction']>;
export type RetractionEvent = ResultOf<typeof Op.RETRACTION_EVENTS>['retractionEvents'];

type DetailEffect = NonNullable<BeliefDetail['effects']>[number];
type PreviewEffect = NonNullable<Preview['pendingEffects']>[number];
/** An effect as the graph holds it: what a preview lists, plus what a belief's neighbourhood adds. */
export type EffectRef = PreviewEffect & Partial<Omit<DetailEffect, keyof PreviewEffect>>;
export type EffectStatus = EffectRef['status'];

type RecordedReversal = Omit<NonNullable<RetractionResult['reversals']>[number], 'effect'>;
/** A reversal as the graph holds it: what a retraction recorded, plus the provider's reference once known. */
export type ReversalRef = RecordedReversal & Partial<Pick<NonNullable<DetailEffect['reversal']>, 'providerRef'>>;
export type ReversalStatus = ReversalRef['status'];

type ReinstateData = ResultOf<typeof Op.REINSTATE_RETRACTION>['reinstateRetraction'];
/** A reinstatement's receipt as the page shows it: the mutation's answer or the receipt query's. */
export type ReinstatementReceipt = Extract<ReinstateData, { __typename: 'RetractionReinstated' }>['reinstatement'];
/** The receipt's head and totals: what an event or the history carries. */
export type ReinstatementCore = Pick<
  ReinstatementReceipt,
  'id' | 'status' | 'reason' | 'createdAt' | 'retraction' | 'actor' | 'totals'
>;
