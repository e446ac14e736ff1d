import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cosineSimilarity, l2Normalize } from '../../src/embedding/embedder';
import { emptyTextVector, fnv1a32, LocalEmbedder, tokenize } from '../../src/embedding/local';

const e = new LocalEmbedder();
const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe('LocalEmbedder', () => {
  it('has the documented id and 512 dimensions', () => {
    expect(e.id).toBe('local:hashed-ngrams-v1');
    expect(e.dimensions).toBe(512);
  });

  it('is deterministic, 512-d and unit-norm for arbitrary text', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme', maxLength: 80 }), async (t) => {
        const [a] = await e.embed([t]);
        const [b] = await new LocalEmbedder().embed([t]);
        expect(a).toEqual(b);
        expect(a).toHaveLength(512);
        expect(a!.every(Number.isFinite)).toBe(true);
        expect(norm(a!)).toBeCloseTo(1, 9);
      }),
      { numRuns: 200 },
    );
  });

  it('pins the hash so vectors stay stable across releases', () => {
    // Changing features, weights or the hash changes the embedding space: bump the id (…-v2) when these move.
    expect(fnv1a32('w:passport')).toBe(45710914);
    const v = e.embedOne('Customer 4411 passport is authentic');
    expect(v[3]).toBeCloseTo(-0.08067, 5);
    expect(v.reduce((s, x, i) => s + x * (i + 1), 0)).toBeCloseTo(-557.965068868, 6);
  });

  it('is bit-identical to the documented definition: each feature string hashed over its UTF-8 bytes (TextEncoder)', () => {
    const utf8 = new TextEncoder();
    // FNV-1a and the murmur3 finaliser in BigInt arithmetic modulo 2^32: written apart from the implementation's
    // Math.imul form, so a slip in either shows here.
    const fnvRef = (s: string) => {
      const low32 = (x: bigint) => x & 0xffffffffn;
      let h = 0x811c9dc5n;
      for (const byte of utf8.encode(s)) h = low32((h ^ BigInt(byte)) * 0x01000193n);
      h ^= h >> 16n;
      h = low32(h * 0x85ebca6bn);
      h ^= h >> 13n;
      h = low32(h * 0xc2b2ae35n);
      return Number(h ^ (h >> 16n));
    };
    const reference = (text: string) => {
      const v = new Float64Array(512);
      const add = (f: string, w: number) => {
        const h = fnvRef(f);
        v[h % 512]! += (h & 0x80000000 ? -1 : 1) * w;
      };
      const words = tokenize(text);
      if (words.length === 0) return emptyTextVector();
      words.forEach((w, i) => {
        add(`w:${w}`, 1.0);
        if (i + 1 < words.length) add(`b:${w} ${words[i + 1]}`, 0.7);
        const cs = Array.from(`<${w}>`);
        for (let j = 0; j + 3 <= cs.length; j++) add(`c3:${cs.slice(j, j + 3).join('')}`, 0.3);
        for (let j = 0; j + 4 <= cs.length; j++) add(`c4:${cs.slice(j, j + 4).join('')}`, 0.3);
      });
      const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
      return n === 0 ? emptyTextVector() : Array.from(v, (x) => x / n);
    };
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.constantFrom(
            'a',
            'Z',
            'é',
            'ß',
            '中',
            '😀',
            '𝔘',
            '\uD800',
            '\uDC00',
            ' ',
            '4',
            'ﬁ',
            '\u0301',
            ',',
            '-',
          ),
          maxLength: 40,
        }),
        (t) => {
          expect(fnv1a32(t)).toBe(fnvRef(t));
          expect(e.embedOne(t)).toEqual(reference(t));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('maps token-less text to the fixed unit vector e0', async () => {
    const vs = await e.embed(['', '   ', '\n\t', '?!…']);
    for (const v of vs) expect(v).toEqual(emptyTextVector());
    expect(norm(vs[0]!)).toBe(1);
  });

  it('normalises case and Unicode compatibility forms (NFKC)', () => {
    expect(e.embedOne('ＣＵＳＴＯＭＥＲ ﬁle')).toEqual(e.embedOne('customer file'));
    expect(tokenize("Café  4411, it's")).toEqual(['café', '4411', 'it', 's']);
  });

  it('scores a paraphrase above unrelated text', () => {
    const a = e.embedOne("The customer's passport was verified as authentic");
    const para = e.embedOne('The passport of the customer is verified and authentic');
    const unrelated = e.embedOne('Quarterly revenue grew by twelve percent in Ohio');
    expect(cosineSimilarity(a, para)).toBeGreaterThan(cosineSimilarity(a, unrelated) + 0.3);
  });

  it('is lexical: a negation stays very close (documented limitation)', () => {
    const a = e.embedOne('Customer 4411 passport is authentic');
    const neg = e.embedOne('Customer 4411 passport is not authentic');
    expect(cosineSimilarity(a, neg)).toBeGreaterThan(0.8);
  });

  it('rejects non-string input with EmbedderError', async () => {
    await expect(e.embed([1 as unknown as string])).rejects.toThrow(
      /local:hashed-ngrams-v1: embed\(\) input #0 is number/,
    );
  });
});

describe('vector helpers', () => {
  it('l2Normalize returns null for the zero vector and unit vectors otherwise', () => {
    expect(l2Normalize([0, 0])).toBeNull();
    expect(l2Normalize([3, 4])).toEqual([0.6, 0.8]);
  });
  it('cosineSimilarity checks lengths', () => {
    expect(() => cosineSimilarity([1], [1, 2])).toThrow(RangeError);
    expect(cosineSimilarity([1, 0], [0, 0])).toBe(0);
  });
});
