import type { Store } from './engine';
import type { Db } from './tx';

/**
 * store_meta: facts about the store itself, in no fleet (a reference table on Citus). Written on
 * the owner connection only; the application and reader roles may read it.
 */

/** Raised when a store was written by another embedder (or dimension) than the one configured. */
export class EmbedderMismatchError extends Error {
  constructor(stored: string, configured: string) {
    super(
      `this store's embeddings were written by ${stored}, but the configured embedder is ${configured}. ` +
        `Vectors from two embedders are not comparable: set RETRACT_EMBEDDER back, or use a new store.`,
    );
    this.name = 'EmbedderMismatchError';
  }
}

/**
 * Records which embedder and dimension write this store on first use, and refuses a different one
 * afterwards (EmbedderMismatchError), so READ never compares vectors from two spaces. Runs on the
 * owner connection (the application role may only read store_meta).
 */
export async function bindEmbedder(
  store: Store,
  embedder: { readonly id: string; readonly dimensions: number },
): Promise<void> {
  const want = `${embedder.id}@${embedder.dimensions}`;
  await store.db
    .insertInto('store_meta')
    .values({ key: 'embedder', value: want })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  const have = (await storedEmbedder(store.db))!;
  if (have !== want) throw new EmbedderMismatchError(have, want);
}

/** The embedder (`id@dimensions`) this store's vectors were written by, or null before the first start. */
export async function storedEmbedder(db: Db): Promise<string | null> {
  return (
    (await db.selectFrom('store_meta').select('value').where('key', '=', 'embedder').executeTakeFirst())?.value ?? null
  );
}
