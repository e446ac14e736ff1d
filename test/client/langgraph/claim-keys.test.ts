// The namespace → claim key encoding RetractStore relies on: reversible for every string, one-to-one, a namespace
// prefix is exactly a claim-key prefix, and every claim key it builds passes the server's own claim-key rule.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CLAIM_KEY_MAX,
  itemClaimKey,
  namespacePrefixKey,
  parseItemClaimKey,
} from '../../../src/client/langgraph/index.js';
import { checkRoot, decodePart, encodePart } from '../../../src/client/langgraph/claim-keys.js';
import { claimKey as serverClaimKey } from '../../../src/validation';

// Any Unicode, slashes, hashes, tildes and the escape's own look-alikes, short enough to fit in 256 characters.
const part = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.string({ unit: 'grapheme', maxLength: 4 }),
  fc.constantFrom('/', '#', '~', '~2F', ' ', 'a.b', 'x:y'),
);
const label = part.filter((l) => l !== '');
const namespace = fc.array(label, { minLength: 1, maxLength: 4 });

describe('RetractStore claim keys', () => {
  it('reads as written for plain names', () => {
    expect(itemClaimKey('lg', ['users', '42', 'memories'], 'food-1')).toBe('lg/users/42/memories/#food-1');
    expect(itemClaimKey('lg', ['a b', 'x/y'], 'é#~')).toBe('lg/a~20b/x~2Fy/#~C3~A9~23~7E');
    expect(namespacePrefixKey('lg', [])).toBe('lg/');
    expect(namespacePrefixKey('lg', ['users'])).toBe('lg/users/');
  });

  it("decodes what it encodes, for any namespace and key, and the claim key passes the server's rule unchanged", () => {
    fc.assert(
      fc.property(namespace, part, (ns, key) => {
        const ck = itemClaimKey('lg', ns, key);
        expect(parseItemClaimKey('lg', ck)).toEqual({ namespace: ns, key });
        expect(serverClaimKey('claimKey', ck)).toBe(ck);
      }),
      { numRuns: 500 },
    );
  });

  it('is one-to-one: two different items never share a claim key', () => {
    fc.assert(
      fc.property(namespace, part, namespace, part, (n1, k1, n2, k2) => {
        fc.pre(JSON.stringify([n1, k1]) !== JSON.stringify([n2, k2]));
        expect(itemClaimKey('lg', n1, k1)).not.toBe(itemClaimKey('lg', n2, k2));
      }),
      { numRuns: 500 },
    );
  });

  it('a namespace prefix is a claim-key prefix of exactly the items whose namespace starts with it', () => {
    fc.assert(
      fc.property(fc.array(label, { maxLength: 3 }), namespace, part, (prefix, ns, key) => {
        const starts = prefix.length <= ns.length && prefix.every((l, i) => ns[i] === l);
        expect(itemClaimKey('lg', ns, key).startsWith(namespacePrefixKey('lg', prefix))).toBe(starts);
      }),
      { numRuns: 500 },
    );
    expect(itemClaimKey('lg', ['users2'], 'k').startsWith(namespacePrefixKey('lg', ['users']))).toBe(false);
  });

  it('refuses a claim key over 256 characters before anything is sent, and a root the server would refuse', () => {
    expect(() => itemClaimKey('lg', ['n'], 'k'.repeat(CLAIM_KEY_MAX))).toThrow(/at most 256/);
    expect(() => itemClaimKey('lg', ['n'], '日'.repeat(30))).toThrow(/encodes to a claim key of 276 characters/);
    expect(itemClaimKey('lg', ['n'], 'k'.repeat(CLAIM_KEY_MAX - 6))).toHaveLength(CLAIM_KEY_MAX);
    for (const bad of ['', '/x', 'a/b', 'a b', '#a', 'x'.repeat(65)]) expect(() => checkRoot(bad)).toThrow(RangeError);
    expect(checkRoot('memory:v1')).toBe('memory:v1');
  });

  it("takes no claim key for an item's that the store would not have written", () => {
    for (const ck of [
      'lg',
      'lg/',
      'lg/#k',
      'lg/n',
      'lg/n/k',
      'lgx/n/#k',
      'lg//#k',
      'lg/n/#~zz',
      'lg/n/#~C3',
      'lg/n/#~2f',
      'lg/n/#~41',
      'lg/a#b/#k',
      'other/n/#k',
    ]) {
      expect(parseItemClaimKey('lg', ck)).toBeNull();
    }
    expect(decodePart('~E2~82~AC')).toBe('€');
    expect(encodePart('€')).toBe('~E2~82~AC');
  });
});
