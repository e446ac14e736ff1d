import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodePart,
  encodePart,
  entityKey,
  observationKey,
  parseKey,
  relationKey,
} from '../../../src/mcp/memory-graph/claim-keys';
import { claimKey } from '../../../src/validation';

describe('memory-graph claim keys', () => {
  it('encode any name reversibly into a key the claim-key rule accepts unchanged', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', maxLength: 40 }),
        fc.string({ maxLength: 20 }),
        fc.string({ unit: 'grapheme-ascii', maxLength: 30 }),
        (name, type, other) => {
          expect(decodePart(encodePart(name))).toBe(name);
          for (const key of [
            entityKey('f', name),
            observationKey('f', name, other),
            relationKey('f', { from: name, relationType: type, to: other }),
          ]) {
            // Accepted as it is, so NFC normalisation cannot make two names one claim.
            expect(claimKey('claimKey', key)).toBe(key);
          }
          expect(parseKey(entityKey('f', name))).toEqual({ kind: 'entity', name });
          expect(parseKey(relationKey('f', { from: name, relationType: type, to: other }))).toEqual({
            kind: 'relation',
            from: name,
            relationType: type,
            to: other,
          });
          expect(parseKey(observationKey('f', name, other))).toMatchObject({ kind: 'observation', entityName: name });
        },
      ),
      { numRuns: 500 },
    );
  });

  it('keep separators, the escape and decomposed accents apart', () => {
    expect(entityKey('f', 'a/b ~c')).toBe('kg/e/a~2Fb~20~7Ec');
    // "é" composed and "e" + combining acute are two names in the reference; they stay two claims.
    expect(entityKey('f', '\u00e9')).not.toBe(entityKey('f', 'e\u0301'));
    expect(parseKey('kg/e/a~2')).toBeNull();
    expect(parseKey('customer:4411/passport.authentic')).toBeNull();
  });

  it('refuse, naming the field, a name too long to fit a claim key', () => {
    expect(() => entityKey('entities[0].name', 'x'.repeat(252))).toThrow(
      /^entities\[0\]\.name: is too long for this memory: encoded as a claim key it takes 257 characters, at most 256 fit/,
    );
    expect(entityKey('f', 'x'.repeat(251))).toHaveLength(256);
  });
});
