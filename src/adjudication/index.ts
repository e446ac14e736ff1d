/**
 * Adjudicator selection. `RETRACT_ADJUDICATOR` picks the implementation.
 */
import { choiceOf } from '../kernel/choice';
import type { Adjudicator } from './adjudicator';
import { BedrockClaudeAdjudicator } from './bedrock';
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
  return choiceOf(ADJUDICATOR_KINDS, 'heuristic', variable, value, (m) => new Error(m));
}

/**
 * Builds the configured adjudicator: `RETRACT_ADJUDICATOR=heuristic` (default) → {@link HeuristicAdjudicator};
 * `bedrock` → {@link BedrockClaudeAdjudicator} (model from `RETRACT_BEDROCK_MODEL_ID`, endpoint from
 * `RETRACT_BEDROCK_ENDPOINT`, region/credentials from the AWS provider chain). Throws on any other value.
 */
export function createAdjudicator(env: NodeJS.ProcessEnv = process.env): Adjudicator {
  const kind = parseAdjudicatorKind(env.RETRACT_ADJUDICATOR);
  return kind === 'bedrock' ? new BedrockClaudeAdjudicator({ env }) : new HeuristicAdjudicator();
}
