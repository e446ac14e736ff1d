import { decodeGlobalID } from '@pothos/plugin-relay';
import { NODE_TYPES, type NodeType } from './ids';

/**
 * How a provider's reference is compared with the identifiers RETRACT issued (a reversal is CONFIRMED only
 * under the provider's own reference; src/reversal/provider-ref.ts holds the rule, docs/guarantees.md states it).
 *
 * The normalisation, {@link foldRef}: Unicode NFC, then {@link EDGE} stripped from both ends, then A–Z folded to
 * a–z. Each step removes one way our own identifier comes back looking different: NFC because composed and
 * decomposed accents are the same text; the edges because copying adds spaces, newlines and zero-width
 * characters; the case fold because people and providers upper-case keys. Not NFKC and not a full Unicode case
 * fold: those make distinct characters equal, and lower() follows the database's locale, which differs between
 * PostgreSQL installations and PGlite. retract_ref_fold (db/migrations/0006_provider_ref.ts) is the same
 * function in SQL; test/hostile/provider-ref.test.ts holds the two equal on both engines.
 */

/** Stripped from both ends: Unicode White_Space, and the zero-width characters that render as nothing. */
export const EDGE = '\t\n\v\f\r \u0085\u00a0\u1680\u180e\u2000-\u200d\u2028\u2029\u202f\u205f\u2060\u3000\ufeff';
const EDGES = new RegExp(`^[${EDGE}]+|[${EDGE}]+$`, 'g');

function trimRef(s: string): string {
  return s.normalize('NFC').replace(EDGES, '');
}

/** The normalised form a reference is compared in. */
export function foldRef(s: string): string {
  return trimRef(s).replace(/[A-Z]+/g, (c) => c.toLowerCase());
}

const DB_ID = /^[1-9][0-9]{0,18}$/;
const MAX_DB_ID = 9223372036854775807n;

/** The database id a reference spells once normalised (a positive bigint in decimal, as we write ids); else null. */
export function asDbId(ref: string): string | null {
  const f = foldRef(ref);
  return DB_ID.test(f) && BigInt(f) <= MAX_DB_ID ? f : null;
}

const TYPE_BY_NAME = new Map<string, NodeType>(NODE_TYPES.map((t) => [t.toLowerCase(), t]));
const READABLE = /^([A-Za-z]+):([1-9][0-9]{0,18})$/;

/**
 * The node type a reference names when it is one of our global ids, in the form the API hands out (base64 of
 * `Type:id`, with or without its padding) or decoded (`Type:id`), the type's name in any case. Whether the node
 * exists does not matter: the form is ours alone, and no provider reference takes it.
 */
export function asGlobalId(ref: string): NodeType | null {
  const s = trimRef(ref);
  for (const candidate of [s, decodedGlobalId(s)]) {
    const m = candidate === null ? null : READABLE.exec(candidate);
    const type = m ? TYPE_BY_NAME.get(m[1]!.toLowerCase()) : undefined;
    if (type) return type;
  }
  return null;
}

function decodedGlobalId(s: string): string | null {
  const padded = s.length % 4 === 0 ? s : s + '='.repeat(4 - (s.length % 4));
  try {
    const d = decodeGlobalID(padded);
    return `${d.typename}:${d.id}`;
  } catch {
    return null;
  }
}

/**
 * Without a store at hand (a provider adapter): what `ref` is when it is one of our global ids, or one of
 * `ours` once both are normalised; null otherwise. The store's check (src/reversal/provider-ref.ts) covers
 * every identifier of the fleet; this one covers what a single request carries.
 */
export function echoOf(ref: string, ours: ReadonlyArray<string | null | undefined>): string | null {
  const type = asGlobalId(ref);
  if (type) return `a global id (${type})`;
  const f = foldRef(ref);
  return ours.some((o) => typeof o === 'string' && foldRef(o) === f) ? 'an identifier from the request' : null;
}
