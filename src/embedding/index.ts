/**
 * Embedder selection. `RETRACT_EMBEDDER` picks the implementation; nothing falls back silently.
 */
import { choiceOf } from '../kernel/choice';
import { BedrockTitanEmbedder } from './bedrock';
import { EmbedderError, type Embedder } from './embedder';
import { LocalEmbedder } from './local';

export { EmbedderError, cosineSimilarity, type Embedder } from './embedder';

/** Allowed values of `RETRACT_EMBEDDER`. */
const EMBEDDER_KINDS = ['local', 'bedrock'] as const;
export type EmbedderKind = (typeof EMBEDDER_KINDS)[number];

/**
 * Parses an embedder kind. Unset or blank means `local`; anything else but `local`/`bedrock` throws an
 * {@link EmbedderError} naming the variable and the allowed values.
 */
export function parseEmbedderKind(value: string | undefined, variable = 'RETRACT_EMBEDDER'): EmbedderKind {
  return choiceOf(EMBEDDER_KINDS, 'local', variable, value, (m) => new EmbedderError('config', m));
}

/**
 * Builds the configured embedder: `RETRACT_EMBEDDER=local` (default) → {@link LocalEmbedder};
 * `bedrock` → {@link BedrockTitanEmbedder} (region/credentials from the AWS provider chain, endpoint from
 * `RETRACT_BEDROCK_ENDPOINT` when set). Throws on any other value.
 */
export function createEmbedder(env: NodeJS.ProcessEnv = process.env): Embedder {
  const kind = parseEmbedderKind(env.RETRACT_EMBEDDER);
  return kind === 'bedrock' ? new BedrockTitanEmbedder({ env }) : new LocalEmbedder();
}
