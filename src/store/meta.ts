import { sql } from 'kysely';
import type { Store } from './engine';

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
export async function bindEmbedder(store: Store, embedder: { readonly id: string; readonly dimensions: number }): Promise<void> {
  const want = `${embedder.id}@${embedder.dimensions}`;
  await sql`INSERT INTO store_meta (key, value) VALUES ('embedder', ${want}) ON CONFLICT (key) DO NOTHING`.execute(store.db);
  const r = await sql<{ value: string }>`SELECT value FROM store_meta WHERE key = 'embedder'`.execute(store.db);
  const have = r.rows[0]!.value;
  if (have !== want) throw new EmbedderMismatchError(have, want);
}
