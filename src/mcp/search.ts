import { DomainError } from '../errors/domain-error';
import { storedEmbedder } from '../store/meta';
import * as v from '../validation';
import { readerTx } from './reader';
import { type SearchArgs, searchBeliefs } from './receipts';
import type { McpDeps } from './toolkit';

/** search_beliefs and recall: embeds the text and reads the nearest beliefs through the reader path. */
export async function searchNearest(deps: McpDeps, fleet: string, a: SearchArgs) {
  const text = v.text('text', a.text, v.LIMITS.statementMax, { multiline: true });
  v.claimKeyPrefix('claimKeyPrefix', a.claimKeyPrefix);
  await checkEmbedder(deps);
  const [vector] = await deps.embedder.embed([text]);
  return readerTx(deps.store, fleet, (tx) => searchBeliefs(tx, fleet, { ...a, vector: vector! }));
}

/** Refuses a search when the store's vectors were written by another embedder than the configured one. */
async function checkEmbedder(deps: McpDeps): Promise<void> {
  const want = `${deps.embedder.id}@${deps.embedder.dimensions}`;
  const have = await readerTx(deps.store, null, storedEmbedder);
  if (have && have !== want) {
    throw new DomainError(
      'CONFLICT',
      `this store's embeddings were written by ${have}, but this server embeds with ${want}; set RETRACT_EMBEDDER to match`,
    );
  }
}
