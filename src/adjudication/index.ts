/**
 * Adjudicator selection. `RETRACT_ADJUDICATOR` picks the implementation.
 */
import { choiceOf } from '../kernel/choice';
import type { Adjudicator } from './adjudicator';
import { HeuristicAdjudicator } from './heuristic';

export * from './adjudicator';

/** `RETRACT_ADJUDICATOR`: `heuristic` (the default) or `bedrock`; any other value is a ConfigError. */
export const parseAdjudicatorKind = choiceOf('RETRACT_ADJUDICATOR', ['heuristic', 'bedrock']);

/**
 * Builds the configured adjudicator: `RETRACT_ADJUDICATOR=heuristic` (default) → {@link HeuristicAdjudicator};
 * `bedrock` → `BedrockClaudeAdjudicator` (model from `RETRACT_BEDROCK_MODEL_ID`, endpoint from
 * `RETRACT_BEDROCK_ENDPOINT`, region/credentials from the AWS provider chain). Throws at once on any other
 * value. The AWS SDK is loaded only for `bedrock` (see createEmbedder).
 */
export function createAdjudicator(env: NodeJS.ProcessEnv = process.env): Promise<Adjudicator> {
  const kind = parseAdjudicatorKind(env.RETRACT_ADJUDICATOR);
  return kind === 'bedrock'
    ? import('./bedrock').then((m) => new m.BedrockClaudeAdjudicator({ env }))
    : Promise.resolve(new HeuristicAdjudicator());
}
