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

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/**
 * The FNV-1a state `h` advanced over the UTF-8 bytes of `s`, encoded on the fly (no allocation);
 * a lone surrogate counts as U+FFFD, as TextEncoder encodes it.
 */
function fnvUpdate(h: number, s: string): number {
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      h = Math.imul(h ^ c, FNV_PRIME);
      continue;
    }
    if (c < 0x800) {
      h = Math.imul(h ^ (0xc0 | (c >> 6)), FNV_PRIME);
      h = Math.imul(h ^ (0x80 | (c & 0x3f)), FNV_PRIME);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        h = Math.imul(h ^ (0xf0 | (cp >> 18)), FNV_PRIME);
        h = Math.imul(h ^ (0x80 | ((cp >> 12) & 0x3f)), FNV_PRIME);
        h = Math.imul(h ^ (0x80 | ((cp >> 6) & 0x3f)), FNV_PRIME);
        h = Math.imul(h ^ (0x80 | (cp & 0x3f)), FNV_PRIME);
        i++;
        continue;
      }
    }
    if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
    h = Math.imul(h ^ (0xe0 | (c >> 12)), FNV_PRIME);
    h = Math.imul(h ^ (0x80 | ((c >> 6) & 0x3f)), FNV_PRIME);
    h = Math.imul(h ^ (0x80 | (c & 0x3f)), FNV_PRIME);
  }
  return h;
}

/** fmix32: FNV-1a alone leaves the low bits (our bucket index) weakly mixed for short inputs. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** 32-bit FNV-1a over the UTF-8 bytes of `s`, followed by a standard 32-bit avalanche finaliser so every bit is well mixed. */
export function fnv1a32(s: string): number {
  return fmix32(fnvUpdate(FNV_OFFSET, s));
}

/** FNV states after each feature's prefix: a feature's hash continues from its prefix's. */
const PREFIX = {
  unigram: fnvUpdate(FNV_OFFSET, 'w:'),
  bigram: fnvUpdate(FNV_OFFSET, 'b:'),
  char3: fnvUpdate(FNV_OFFSET, 'c3:'),
  char4: fnvUpdate(FNV_OFFSET, 'c4:'),
};
const SPACE = 0x20;

/** Lower-cased, NFKC-normalised word tokens: maximal runs of letters, marks and digits. */
export function tokenize(text: string): string[] {
  return (
    text
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{M}\p{N}]+/gu) ?? []
  );
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
    // Each feature is hashed as the string `w:<word>`, `b:<word> <next>`, `c3:<3 code points>`,
    // `c4:<4 code points>` would be (fnv1a32 of it), without building the string.
    const add = (state: number, weight: number) => {
      const h = fmix32(state);
      const sign = h & 0x80000000 ? -1 : 1;
      v[h % dims]! += sign * weight;
    };

    const words = tokenize(text);
    if (words.length === 0) return emptyTextVector(dims);

    for (let i = 0; i < words.length; i++) {
      const w = words[i]!;
      const hw = fnvUpdate(PREFIX.unigram, w);
      add(hw, WEIGHTS.unigram);
      if (i + 1 < words.length)
        add(fnvUpdate(Math.imul(fnvUpdate(PREFIX.bigram, w) ^ SPACE, FNV_PRIME), words[i + 1]!), WEIGHTS.bigram);
      const chars = Array.from(`<${w}>`); // code points, so astral characters are not split
      for (let j = 0; j + 3 <= chars.length; j++) {
        const h3 = fnvUpdate(fnvUpdate(fnvUpdate(PREFIX.char3, chars[j]!), chars[j + 1]!), chars[j + 2]!);
        add(h3, WEIGHTS.char3);
      }
      for (let j = 0; j + 4 <= chars.length; j++) {
        const h4 = fnvUpdate(
          fnvUpdate(fnvUpdate(fnvUpdate(PREFIX.char4, chars[j]!), chars[j + 1]!), chars[j + 2]!),
          chars[j + 3]!,
        );
        add(h4, WEIGHTS.char4);
      }
    }

    let sum = 0;
    for (const x of v) sum += x * x;
    // Signed hashing can (very rarely) cancel every feature exactly; fall back to the documented vector.
    if (sum === 0) return emptyTextVector(dims);
    const norm = Math.sqrt(sum);
    return Array.from(v, (x) => x / norm);
  }
}
