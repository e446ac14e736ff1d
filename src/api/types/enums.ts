import type { BeliefRow } from '../../belief/belief.repository';
import type { ContradictionRow } from '../../contradiction/contradiction.repository';
import type { EffectRow } from '../../effect/effect.repository';
import { type Granularity, LEVEL_BATCH } from '../../event/tailer';
import type { ReinstatementRow } from '../../reinstatement/reinstatement.repository';
import type { MoneyLineRow } from '../../reversal/money-line.repository';
import type { ReversalRow } from '../../reversal/reversal.repository';
import { enumOf } from '../shapes';

/**
 * The schema's enums: each lifecycle's states, and what each means, in the order a retraction meets them (a
 * reversal's fate under a reinstatement beside the reversal's states). Each is typed by its row's union
 * (`enumOf`), so a state the table can hold and the schema does not name fails tsc.
 */

export const BeliefStatusEnum = enumOf<BeliefRow['status']>(
  'BeliefStatus',
  'ACTIVE while believed; RETRACTED once a retraction took it down. Asserting its claim again writes a new belief; only reinstateRetraction brings this one back, ACTIVE again under its own id.',
  {
    ACTIVE: 'Believed.',
    RETRACTED: 'Taken down by a retraction.',
  },
);

export const EffectStatusEnum = enumOf<EffectRow['status']>(
  'EffectStatus',
  'PENDING → EXECUTING → EXECUTED, or CANCELLED (by a retraction) / FAILED (by its executor).',
  {
    PENDING: 'Proposed, not yet taken by an executor.',
    EXECUTING: 'Taken by an executor; it may already have happened.',
    EXECUTED: 'Done; the executor reported its reference.',
    CANCELLED: 'A retraction cancelled it while PENDING: it can never run.',
    FAILED: 'Its executor reported that it did not happen.',
  },
);

export const ReversalStatusEnum = enumOf<ReversalRow['status']>(
  'ReversalStatus',
  'OWED → DISPATCHED → CONFIRMED / FAILED, or UNREACHABLE; VOIDED when a reinstatement took its retraction back before any money moved.',
  {
    OWED: 'Recorded as owed, not yet sent.',
    DISPATCHED: 'Sent to a provider, no confirmation yet.',
    CONFIRMED: 'A provider confirmed it with a reference this server did not generate.',
    FAILED: 'The provider refused it; reason says why.',
    UNREACHABLE: "No compensation handler exists for the effect's kind.",
    VOIDED:
      'No longer owed: a reinstatement took its retraction back before it was sent (it was OWED or UNREACHABLE), or the provider refused one it watched.',
  },
);

export const MoneyLineEnum = enumOf<MoneyLineRow['line']>(
  'ReinstatementMoneyLineKind',
  'What a reinstatement says about one reversal of its retraction.',
  {
    VOIDED:
      'No longer owed: it was OWED and never sent, or UNREACHABLE (or the provider refused one that was in flight).',
    IN_FLIGHT:
      "It was DISPATCHED (or FAILED) when the reinstatement ran: the provider's answer decides; a confirmation makes it re-execution owed.",
    REEXECUTION_OWED:
      'It was CONFIRMED: the money came back and should not have. Owed again under reexecutionKey; RETRACT never executes it.',
  },
);

export const ContradictionStatusEnum = enumOf<ContradictionRow['status']>(
  'ContradictionStatus',
  'OPEN → ADJUDICATING (under a lease) → RESOLVED; an ESCALATE verdict returns it to OPEN.',
  {
    OPEN: 'Waiting for an adjudicator or an agent.',
    ADJUDICATING: "An adjudicator holds the claim's lease.",
    RESOLVED: 'A verdict was committed.',
  },
);

export const VerdictEnum = enumOf<NonNullable<ContradictionRow['verdict']>>('Verdict', 'What an adjudicator decided.', {
  KEEP_EXISTING: 'The ACTIVE belief stands; the proposal is dropped.',
  ACCEPT_PROPOSED: 'The existing belief is retracted (full cascade) and the proposal written ACTIVE.',
  ESCALATE: 'Could not decide; left for resolveContradiction.',
});

export const ReinstatementStatusEnum = enumOf<ReinstatementRow['status']>(
  'ReinstatementStatus',
  'Whether a reinstatement brought its retraction back.',
  {
    REINSTATED: 'The root and what rested on it came back (see beliefs).',
    BLOCKED:
      "The root's claim holds another ACTIVE belief: a contradiction was raised and nothing else changed. ACCEPT_PROPOSED on it completes the reinstatement; KEEP_EXISTING leaves it blocked.",
  },
);

export const GranularityEnum = enumOf<Granularity>(
  'RetractionEventGranularity',
  'How finely retractionEvents reports a cascade.',
  {
    BELIEF:
      'One event per belief that fell or came back, effect cancelled or restored and reversal recorded or voided (BeliefRetracted, EffectCancelled, ReversalRecorded, BeliefReinstated, ReversalVoided, EffectRestored).',
    LEVEL: `One event per cascade level and kind (BeliefsRetracted, EffectsCancelled, ReversalsRecorded, BeliefsReinstated, ReversalsVoided, EffectsRestored), up to ${LEVEL_BATCH} items each: far fewer messages for a big cascade.`,
  },
);
