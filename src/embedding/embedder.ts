/**
 * The embedding contract shared by every embedder in RETRACT.
 *
 * Embeddings are used for READ (approximate nearest-neighbour search over beliefs) and nothing else:
 * they never decide identity. Paraphrase and negation embed almost identically, so claim keys, not
 * vectors, say what a belief is about.
 */

/** Dimensionality of every vector RETRACT stores (the pgvector column is `vector(512)`). */
export const EMBEDDING_DIMENSIONS = 512;

/**
 * Turns texts into vectors.
 *
 * Guarantees of every implementation:
 * - `embed(texts)` resolves to exactly one vector per input text, in input order;
 * - every vector has length `dimensions` (512), contains only finite numbers, and is L2-normalised
 *   (Euclidean norm 1 within floating-point error), so cosine similarity is a dot product;
 * - on failure it rejects with an {@link EmbedderError}; it never silently substitutes another embedder.
 *
 * `id` names the embedding space (model and version). Vectors with different ids are not comparable.
 */
export interface Embedder {
  readonly id: string;
  readonly dimensions: number;
  embed(texts: string[]): Promise<number[][]>;
}

/**
 * The only error an {@link Embedder} rejects with. The message names the embedder and the cause
 * (for a remote model: the model id, the attempts made, and the last failure).
 */
export class EmbedderError extends Error {
  /** Id of the embedder that failed, e.g. `bedrock:amazon.titan-embed-text-v2:0`. */
  readonly embedderId: string;

  constructor(embedderId: string, message: string, options?: { cause?: unknown }) {
    super(`${embedderId}: ${message}`, options);
    this.name = 'EmbedderError';
    this.embedderId = embedderId;
  }
}

/**
 * Scales `v` to unit Euclidean length. Returns `null` (instead of dividing by zero) when the norm is 0 or
 * not finite, so callers must decide what a degenerate vector means.
 */
export function l2Normalize(v: readonly number[]): number[] | null {
  let sum = 0;
  for (const x of v) sum += x * x;
  const norm = Math.sqrt(sum);
  if (!Number.isFinite(norm) || norm === 0) return null;
  return v.map((x) => x / norm);
}

/** Cosine similarity of two equal-length vectors (0 when either has zero norm). Throws on length mismatch. */
export function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) {
    throw new RangeError(`cosineSimilarity: length mismatch (${a.length} vs ${b.length})`);
  }
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  if (na === 0 || nb === 0) return 0;
  return dot / Math.sqrt(na * nb);
}
