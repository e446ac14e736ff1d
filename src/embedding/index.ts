/**
 * Embedder selection. `RETRACT_EMBEDDER` picks the implementation; nothing falls back silently.
 */
import { choiceOf } from '../kernel/choice';
import type { Embedder } from './embedder';
import { LocalEmbedder } from './local';

export { cosineSimilarity, type Embedder } from './embedder';

/** `RETRACT_EMBEDDER`: `local` (the default) or `bedrock`; any other value is a ConfigError. */
export const parseEmbedderKind = choiceOf('RETRACT_EMBEDDER', ['local', 'bedrock']);

/**
 * Builds the configured embedder: `RETRACT_EMBEDDER=local` (default) → {@link LocalEmbedder};
 * `bedrock` → `BedrockTitanEmbedder` (region/credentials from the AWS provider chain, endpoint from
 * `RETRACT_BEDROCK_ENDPOINT` when set). Throws at once on any other value. The AWS SDK is loaded only
 * for `bedrock`: it is a large part of what a process would otherwise load at start-up.
 */
export function createEmbedder(env: NodeJS.ProcessEnv = process.env): Promise<Embedder> {
  const kind = parseEmbedderKind(env.RETRACT_EMBEDDER);
  return kind === 'bedrock'
    ? import('./bedrock').then((m) => new m.BedrockTitanEmbedder({ env }))
    : Promise.resolve(new LocalEmbedder());
}
