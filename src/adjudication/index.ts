/**
 * Adjudicator selection. `RETRACT_ADJUDICATOR` picks the implementation.
 */
import { choiceOf } from '../kernel/choice';
import type { Adjudicator } from './adjudicator';
import { HeuristicAdjudicator } from './heuristic';

export * from './adjudicator';

/** Allowed values of `RETRACT_ADJUDICATOR`. */
const ADJUDICATOR_KINDS = ['heuristic', 'bedrock'] as const;
export type AdjudicatorKind = (typeof ADJUDICATOR_KINDS)[number];

/**
 * Parses an adjudicator kind. Unset or blank means `heuristic`; anything else but `heuristic`/`bedrock`
 * throws an Error naming the variable and the allowed values.
 */
export function parseAdjudicatorKind(value: string | undefined, variable = 'RETRACT_ADJUDICATOR'): AdjudicatorKind {
  return choiceOf(ADJUDICATOR_KINDS, 'heuristic', variable, value);
}

/**
 * Builds the configured adjudicator: `RETRACT_ADJUDICATOR=heuristic` (default) → {@link HeuristicAdjudicator};
 * `bedrock` → `BedrockClaudeAdjudicator` (model from `RETRACT_BEDROCK_MODEL_ID`, endpoint from
 * `RETRACT_BEDROCK_ENDPOINT`, region/credentials from the AWS provider chain). Throws at once on any other
 * value. The AWS SDK is loaded only for `bedrock` (see createEmbedder).
 */
export function createAdjudicator(env: NodeJS.ProcessEnv = process.env): Promise<Adjudicator> {
  const kind = parseAdjudicatorKind(env.RETRACT_ADJUDICATOR);
  return kind === 'bedrock' ? import('./bedrock').then((m) => new m.BedrockClaudeAdjudicator({ env })) : Promise.resolve(new HeuristicAdjudicator());
}
