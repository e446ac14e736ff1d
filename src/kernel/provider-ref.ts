import { NODE_TYPES, type NodeType } from './ids';
import { invisibleIn } from './invisible';

/**
 * How a provider's reference is compared with the identifiers RETRACT issued (a reversal is CONFIRMED only
 * under the provider's own reference; src/reversal/provider-ref.ts holds the rule, docs/guarantees.md states it).
 *
 * Before any comparison, a reference holding an invisible code point (Default_Ignorable_Code_Point, Cf,
 * Bidi_Control; src/kernel/invisible.ts) is refused (v.providerRef; {@link echoOf} for the HTTP adapter): with
 * one, our own key would no longer equal itself under any normalisation short of stripping them all.
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
/** Longest encoded global id: the longest type name, a colon and 19 digits, base64 (4 characters per 3 bytes). */
const ENCODED_MAX = Math.ceil((Math.max(...NODE_TYPES.map((t) => t.length)) + 20) / 3) * 4;

/**
 * The node type a reference names when it is one of our global ids, in the form the API hands out (base64 of
 * `Type:id`, with or without its padding) or decoded (`Type:id`), in ANY letter case: the type's name in any
 * case, and the base64 form with any of its letters' case changed (`umv2zxjzywW6mtiz` is `UmV2ZXJzYWw6MTIz`
 * lower-cased), since a provider or a person may change the case of what they copy. Whether the node exists
 * does not matter: the form is ours alone, and no provider reference takes it.
 */
export function asGlobalId(ref: string): NodeType | null {
  const s = trimRef(ref);
  const m = READABLE.exec(s);
  const type = m ? TYPE_BY_NAME.get(m[1]!.toLowerCase()) : undefined;
  return type ?? encodedInAnyCase(s);
}

/**
 * Whether some re-casing of `s`'s letters is the base64 of `Type:id`: decoded one 4-character group at a time,
 * each group in every casing of its letters (at most 16), keeping only the decodings that still spell a prefix
 * of `type:digits`. What is kept is that prefix with letters lower-cased and digits reduced to their count,
 * so the states stay few whatever the id.
 */
function encodedInAnyCase(s: string): NodeType | null {
  const body = s.replace(/={1,2}$/, '');
  if (body.length > ENCODED_MAX || body.length % 4 === 1 || !/^[A-Za-z0-9+/]+$/.test(body)) return null;
  let states = new Set<string>(['']);
  for (let i = 0; i < body.length && states.size > 0; i += 4) {
    const next = new Set<string>();
    for (const chunk of casings(body.slice(i, i + 4))) {
      const decoded = Buffer.from(chunk, 'base64').toString('latin1');
      for (const st of states) {
        const extended = extend(st, decoded);
        if (extended !== null) next.add(extended);
      }
    }
    states = next;
  }
  for (const st of states) {
    const m = /^([a-z]+):#([1-9]\d*)$/.exec(st);
    if (m && Number(m[2]) <= 19) return TYPE_BY_NAME.get(m[1]!) ?? null;
  }
  return null;
}

/** Every casing of a group's letters. */
function casings(group: string): string[] {
  let out = [''];
  for (const c of group) {
    const forms = /[A-Za-z]/.test(c) ? [c.toLowerCase(), c.toUpperCase()] : [c];
    out = out.flatMap((p) => forms.map((f) => p + f));
  }
  return out;
}

const TYPE_NAMES = [...TYPE_BY_NAME.keys()];

/** `state` (the normalised prefix so far) followed by `decoded`, when that is still a prefix of `type:id`; else null. */
function extend(state: string, decoded: string): string | null {
  let st = state;
  for (const ch of decoded) {
    const hash = st.indexOf('#');
    if (hash >= 0) {
      if (!/[0-9]/.test(ch)) return null;
      const n = Number(st.slice(hash + 1));
      if (n === 0 && ch === '0') return null;
      st = `${st.slice(0, hash + 1)}${n + 1}`;
    } else if (ch === ':') {
      if (!TYPE_BY_NAME.has(st)) return null;
      st = `${st}:#0`;
    } else if (/[A-Za-z]/.test(ch)) {
      st += ch.toLowerCase();
      if (!TYPE_NAMES.some((t) => t.startsWith(st))) return null;
    } else {
      return null;
    }
  }
  return st;
}

/**
 * Without a store at hand (a provider adapter): what `ref` is when it is one of our global ids, or one of
 * `ours` once both are normalised; null otherwise. The store's check (src/reversal/provider-ref.ts) covers
 * every identifier of the fleet; this one covers what a single request carries.
 */
export function echoOf(ref: string, ours: ReadonlyArray<string | null | undefined>): string | null {
  const invisible = invisibleIn(ref);
  if (invisible) return `a reference with an invisible or format character (${invisible}), which the store refuses`;
  const type = asGlobalId(ref);
  if (type) return `a global id (${type})`;
  const f = foldRef(ref);
  return ours.some((o) => typeof o === 'string' && foldRef(o) === f) ? 'an identifier from the request' : null;
}
