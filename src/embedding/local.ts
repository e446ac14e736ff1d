/**
 * An offline, deterministic embedder built from hashed n-grams ("the hashing trick").
 *
 * What it is: a LEXICAL fingerprint. Texts that share words, word pairs and character fragments score
 * high; texts that mean the same thing in different words score low, and a sentence and its negation
 * ("X is authentic" / "X is not authentic") score very high. It is good enough to make nearest-neighbour
 * READ work offline and in tests; it is not semantic, and nothing in RETRACT lets it decide identity.
 */
import { EMBEDDING_DIMENSIONS, EmbedderError, type Embedder } from './embedder';

/** Feature weights. Word features dominate; character n-grams add tolerance to inflection and typos. */
const WEIGHTS = { unigram: 1.0, bigram: 0.7, char3: 0.3, char4: 0.3 } as const;

const encoder = new TextEncoder();

/** 32-bit FNV-1a over the UTF-8 bytes of `s`, followed by a standard 32-bit avalanche finaliser so every bit is well mixed. */
export function fnv1a32(s: string): number {
  let h = 0x811c9dc5;
  for (const byte of encoder.encode(s)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193);
  }
  // fmix32: FNV-1a alone leaves the low bits (our bucket index) weakly mixed for short inputs.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Lower-cased, NFKC-normalised word tokens: maximal runs of letters, marks and digits. */
export function tokenize(text: string): string[] {
  return text.normalize('NFKC').toLowerCase().match(/[\p{L}\p{M}\p{N}]+/gu) ?? [];
}

/**
 * The fixed vector for a text with no word tokens (empty, whitespace- or punctuation-only): the first
 * basis vector e0. A zero vector would make cosine undefined; e0 keeps the unit-norm guarantee, makes all
 * token-less texts identical to each other (cosine 1), and leaves their cosine to any other text equal to
 * that text's (small, pseudo-random) component on axis 0.
 */
export function emptyTextVector(dimensions = EMBEDDING_DIMENSIONS): number[] {
  const v = new Array<number>(dimensions).fill(0);
  v[0] = 1;
  return v;
}

/**
 * Deterministic, offline embedder (`local:hashed-ngrams-v1`).
 *
 * Guarantees: same text → bit-identical vector on every machine and run; 512 dimensions; L2-normalised;
 * no network, no state. Features (after NFKC + lower-casing): word unigrams, word bigrams, and character
 * 3- and 4-grams of each word padded with boundary marks; each feature is hashed (FNV-1a + finaliser) to
 * one of 512 buckets and added with a hash-derived sign (signed hashing keeps collisions unbiased).
 * Lexical, not semantic: see the module comment.
 */
export class LocalEmbedder implements Embedder {
  readonly id = 'local:hashed-ngrams-v1';
  readonly dimensions = EMBEDDING_DIMENSIONS;

  async embed(texts: string[]): Promise<number[][]> {
    if (!Array.isArray(texts)) throw new EmbedderError(this.id, 'embed() expects an array of strings');
    return texts.map((t, i) => {
      if (typeof t !== 'string') {
        throw new EmbedderError(this.id, `embed() input #${i} is ${typeof t}, expected a string`);
      }
      return this.embedOne(t);
    });
  }

  /** Synchronous form of {@link embed} for a single text (same result). */
  embedOne(text: string): number[] {
    const dims = this.dimensions;
    const v = new Float64Array(dims);
    const add = (feature: string, weight: number) => {
      const h = fnv1a32(feature);
      const sign = h & 0x80000000 ? -1 : 1;
      v[h % dims]! += sign * weight;
    };

    const words = tokenize(text);
    if (words.length === 0) return emptyTextVector(dims);

    for (let i = 0; i < words.length; i++) {
      const w = words[i]!;
      add(`w:${w}`, WEIGHTS.unigram);
      if (i + 1 < words.length) add(`b:${w} ${words[i + 1]!}`, WEIGHTS.bigram);
      const chars = Array.from(`<${w}>`); // code points, so astral characters are not split
      for (let j = 0; j + 3 <= chars.length; j++) add(`c3:${chars.slice(j, j + 3).join('')}`, WEIGHTS.char3);
      for (let j = 0; j + 4 <= chars.length; j++) add(`c4:${chars.slice(j, j + 4).join('')}`, WEIGHTS.char4);
    }

    let sum = 0;
    for (const x of v) sum += x * x;
    // Signed hashing can (very rarely) cancel every feature exactly; fall back to the documented vector.
    if (sum === 0) return emptyTextVector(dims);
    const norm = Math.sqrt(sum);
    return Array.from(v, (x) => x / norm);
  }
}
