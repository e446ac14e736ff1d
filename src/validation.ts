import { badInput } from './errors/domain-error';
import { codePoint, invisibleIn } from './kernel/invisible';
import { lookAlikeIn } from './kernel/look-alike';

/**
 * Input rules shared by the services and the API. Every rule throws a BAD_USER_INPUT DomainError
 * naming the field and the rule, before anything is written.
 */
export const LIMITS = {
  claimKeyMax: 256,
  statementMax: 4000,
  evidenceMax: 4000,
  reasonMax: 1000,
  valueBytesMax: 16_384,
  payloadBytesMax: 16_384,
  premisesMax: 64,
  supportsMax: 64,
  idempotencyKeyMax: 200,
  providerRefMax: 500,
  kindMax: 64,
  nameMax: 64,
  /** Largest integer minor-unit amount (2^53-1). */
  amountMax: Number.MAX_SAFE_INTEGER,
} as const;

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** A code point that shows: not White_Space, not a control, not INVISIBLE. */
const VISIBLE = /[^\p{White_Space}\p{Cc}\p{Default_Ignorable_Code_Point}\p{Cf}\p{Bidi_Control}]/u;
const INVISIBLE_RULE =
  'must not contain invisible, format or bidirectional-control characters (Unicode Default_Ignorable_Code_Point, Cf, Bidi_Control)';

/** Refuses `s` when it holds an INVISIBLE code point, naming the first. */
function noInvisible(field: string, s: string): string {
  const at = invisibleIn(s);
  if (at) throw badInput(field, `${INVISIBLE_RULE}; found ${at}`);
  return s;
}

/**
 * A non-empty string within `max` characters, with no NUL/control characters and no lone surrogates, and at
 * least one visible character (spaces, zero-width and format characters alone are empty).
 */
export function text(field: string, v: unknown, max: number, opts: { multiline?: boolean } = {}): string {
  if (typeof v !== 'string') throw badInput(field, 'must be a string');
  if (!VISIBLE.test(v)) throw badInput(field, 'must not be empty: it needs at least one visible character');
  if (v.length > max) throw badInput(field, `must be at most ${max} characters (got ${v.length})`);
  if (v.includes('\u0000')) throw badInput(field, 'must not contain NUL characters');
  if (!opts.multiline && CONTROL.test(v)) throw badInput(field, 'must not contain control characters');
  if (LONE_SURROGATE.test(v)) throw badInput(field, 'must be valid Unicode (no lone surrogates)');
  return v;
}

export function optionalText(
  field: string,
  v: unknown,
  max: number,
  opts: { multiline?: boolean } = {},
): string | null {
  if (v === undefined || v === null) return null;
  return text(field, v, max, opts);
}

/**
 * A provider's reference (the providerRef rule, src/kernel/provider-ref.ts): text within `max` characters and
 * no INVISIBLE code point anywhere, so our own key or id with an invisible character added is not a new reference.
 */
export function providerRef(field: string, v: unknown, max: number = LIMITS.providerRefMax): string {
  return noInvisible(field, text(field, v, max));
}

/**
 * An idempotency key as given, never rewritten (a stored key is compared byte for byte): refused unless it is
 * already Unicode NFC, without white space at either end and without INVISIBLE code points. Normalising instead
 * would make a retry of a key stored before this rule a different key, and so a second effect.
 */
export function idempotencyKey(field: string, v: unknown): string {
  const s = noInvisible(field, text(field, v, LIMITS.idempotencyKeyMax));
  if (s.trim() !== s) throw badInput(field, 'must not begin or end with white space');
  if (s.normalize('NFC') !== s)
    throw badInput(field, 'must be in Unicode normalisation form C (NFC): compose accents, e.g. "é" as U+00E9');
  return s;
}

/** An agent's name: text within LIMITS.nameMax characters and no INVISIBLE code point. */
export function agentName(field: string, v: unknown): string {
  return noInvisible(field, text(field, v, LIMITS.nameMax));
}

const CLAIM_KEY = /^[\p{L}\p{N}][\p{L}\p{N}:/._\-@#+=~]*$/u;
/**
 * Claim keys: 1–256 characters, starting with a letter or digit, then letters, digits and
 * `:/._-@#+=~`. A key is normalised to Unicode NFC before any rule and before it is stored or
 * compared, so a composed "é" and "e" + combining accent name one claim (the decomposed form's
 * combining mark would otherwise be refused, or a second spelling would be a second claim).
 * The rule for naming a claim to read; a key to write under must also pass {@link newClaimKey}.
 */
export function claimKey(field: string, v: unknown): string {
  const s = text(field, typeof v === 'string' && !LONE_SURROGATE.test(v) ? v.normalize('NFC') : v, LIMITS.claimKeyMax);
  if (!CLAIM_KEY.test(s)) {
    throw badInput(
      field,
      'must start with a letter or digit and contain only letters, digits and : / . _ - @ # + = ~ (no spaces)',
    );
  }
  return s;
}

/**
 * A key a belief is asserted under: claimKey, and refused when it could pass for another key
 * (docs/input-rules.md): INVISIBLE code points (U+3164 is a letter that shows nothing), compatibility
 * characters (a key must be its own NFKC form: no fullwidth letters, ligatures or superscripts), and ASCII
 * look-alikes mixed into or making up a word (src/kernel/look-alike.ts). Reads keep the plain claimKey rule,
 * so a claim stored before these rules can still be named.
 */
export function newClaimKey(field: string, v: unknown): string {
  if (typeof v === 'string') noInvisible(field, v);
  const s = claimKey(field, v);
  const nfkc = s.normalize('NFKC');
  if (nfkc !== s) {
    const at = [...s].find((c) => c.normalize('NFKC') !== c)!;
    throw badInput(
      field,
      `must not contain compatibility characters (it must be its own Unicode NFKC form); "${at}" (${codePoint(at)}) stands for "${at.normalize('NFKC')}"`,
    );
  }
  const alike = lookAlikeIn(s);
  if (alike) {
    throw badInput(
      field,
      `must not mix look-alikes of ASCII letters or digits into a word, nor spell a word with them only (Unicode TR39 confusables); "${alike.char}" (${codePoint(alike.char)}) in "${alike.segment}" reads as ASCII`,
    );
  }
  return s;
}

/** Same rule as claimKey, but a prefix may be any leading part of a key. */
export function claimKeyPrefix(field: string, v: unknown): string | null {
  if (v === undefined || v === null || v === '') return null;
  return claimKey(field, v);
}

/**
 * JSON within a byte budget; returns its serialised form (null stays null). Every string and every
 * object key, at any depth, must be valid Unicode without NUL: PostgreSQL's jsonb refuses both, and
 * the refusal must name the field, not surface as a database error.
 */
export function json(field: string, v: unknown, maxBytes: number): string | null {
  if (v === undefined || v === null) return null;
  let s: string;
  let nonFinite: string | null = null;
  try {
    // JSON has no Infinity or NaN: JSON.stringify would write null in their place (1e400 parses as Infinity).
    s = JSON.stringify(v, function (this: unknown, k, x: unknown) {
      if (typeof x === 'number' && !Number.isFinite(x) && nonFinite === null)
        nonFinite = Array.isArray(this) ? `[${k}]` : k ? `[${printable(k)}]` : '';
      return x;
    });
  } catch {
    throw badInput(field, 'must be JSON-serialisable');
  }
  if (nonFinite !== null)
    throw badInput(
      field,
      `numbers must be finite (at most about 1.8e308 in size); one is not (at ${field}${nonFinite as string})`,
    );
  if (s === undefined) throw badInput(field, 'must be JSON');
  if (Buffer.byteLength(s) > maxBytes) throw badInput(field, `must be at most ${maxBytes} bytes of JSON`);
  // Walk what will be stored (the serialised form: toJSON applied, undefined members gone).
  const bad = jsonStringFault(JSON.parse(s), field);
  if (bad) throw badInput(field, `${bad.rule} (at ${bad.path})`);
  return s;
}

/** The first string or key holding a NUL or a lone surrogate, with its path; null when none does. */
function jsonStringFault(root: unknown, field: string): { rule: string; path: string } | null {
  const stack: Array<[unknown, string]> = [[root, field]];
  const check = (str: string, path: string) => {
    if (str.includes('\u0000')) return { rule: 'must not contain NUL characters', path };
    if (LONE_SURROGATE.test(str)) return { rule: 'must be valid Unicode (no lone surrogates)', path };
    return null;
  };
  while (stack.length > 0) {
    const [x, path] = stack.pop()!;
    if (typeof x === 'string') {
      const f = check(x, path);
      if (f) return f;
    } else if (Array.isArray(x)) {
      x.forEach((item, i) => stack.push([item, `${path}[${i}]`]));
    } else if (x !== null && typeof x === 'object') {
      for (const [k, item] of Object.entries(x)) {
        const at = `${path}[${printable(k)}]`;
        const f = check(k, `the key ${at}`);
        if (f) return f;
        stack.push([item, at]);
      }
    }
  }
  return null;
}

/** A key as it can be quoted in a message: JSON.stringify escapes controls and lone surrogates. */
function printable(k: string): string {
  return JSON.stringify(k.length > 40 ? `${k.slice(0, 40)}…` : k);
}

const KIND = /^[a-z][a-z0-9_.-]*$/;
export function kind(field: string, v: unknown): string {
  const s = text(field, v, LIMITS.kindMax);
  if (!KIND.test(s)) throw badInput(field, 'must be lower-case letters, digits, _ . - and start with a letter');
  return s;
}

/** ISO 4217 codes as Node's ICU knows them (current codes; no X-codes for metals or testing). */
const CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf('currency'));

/** Positive integer minor units within 2^53-1, and an ISO 4217 currency code. */
export function money(field: string, v: unknown): { amountMinor: number; currency: string } | null {
  if (v === undefined || v === null) return null;
  const m = v as { amountMinor?: unknown; currency?: unknown };
  const a = m.amountMinor;
  if (typeof a !== 'number' || !Number.isInteger(a))
    throw badInput(`${field}.amountMinor`, 'must be an integer number of minor units');
  if (a <= 0) throw badInput(`${field}.amountMinor`, 'must be positive');
  if (a > LIMITS.amountMax) throw badInput(`${field}.amountMinor`, `must be at most ${LIMITS.amountMax}`);
  if (typeof m.currency !== 'string' || !/^[A-Z]{3}$/.test(m.currency)) {
    throw badInput(`${field}.currency`, 'must be three capital letters (ISO 4217), e.g. USD');
  }
  if (!CURRENCIES.has(m.currency))
    throw badInput(`${field}.currency`, `must be an ISO 4217 currency code, e.g. USD; ${m.currency} is not one`);
  return { amountMinor: a, currency: m.currency };
}

/** A database id: a positive integer string. */
export function id(field: string, v: unknown): string {
  const s = typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : v;
  if (typeof s !== 'string' || !/^[1-9][0-9]{0,18}$/.test(s) || BigInt(s) > 9223372036854775807n) {
    throw badInput(field, 'must be a valid id');
  }
  return s;
}

/** A list of distinct ids between min and max long. */
export function ids(field: string, v: unknown, min: number, max: number): string[] {
  if (v === undefined || v === null) v = [];
  if (!Array.isArray(v)) throw badInput(field, 'must be a list of ids');
  if (v.length < min) throw badInput(field, `must name at least ${min} id${min === 1 ? '' : 's'}`);
  if (v.length > max) throw badInput(field, `must name at most ${max} ids`);
  const out = v.map((x, i) => id(`${field}[${i}]`, x));
  return [...new Set(out)];
}

/**
 * The instants a DateTime may name: years 0001 to 9999 (UTC), RFC 3339's four-digit years. Every engine stores
 * them (PostgreSQL's timestamptz holds 4713 BC to 294276 AD; JavaScript's Date ±8.64e15 ms, about 271821 BC to
 * 275760 AD), and no year 0: PostgreSQL has none, and node-postgres would send one it cannot read.
 */
const INSTANT_RANGE = { min: new Date('0001-01-01T00:00:00.000Z'), max: new Date('9999-12-31T23:59:59.999Z') } as const;
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|([+-])(\d{2}):(\d{2}))$/i;
const INSTANT_FORM = 'must be an RFC 3339 instant with a time zone, e.g. 2026-12-01T08:00:00.000Z';

/**
 * An RFC 3339 date-time with its offset, naming a real calendar instant (no 30 February, no hour 24, no leap
 * second) within INSTANT_RANGE once taken to UTC. Fractions beyond milliseconds are cut (a Date holds ms).
 */
export function instant(field: string, v: unknown): Date {
  const m = typeof v === 'string' ? RFC3339.exec(v) : null;
  if (!m) throw badInput(field, INSTANT_FORM);
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const [oh, om] = m[9] ? [Number(m[10]), Number(m[11])] : [0, 0];
  const local = new Date(0);
  local.setUTCFullYear(y, mo - 1, d);
  local.setUTCHours(h, mi, s, Number((m[7] ?? '.0').slice(1, 4).padEnd(3, '0')));
  if (
    local.getUTCFullYear() !== y ||
    local.getUTCMonth() !== mo - 1 ||
    local.getUTCDate() !== d ||
    local.getUTCHours() !== h ||
    local.getUTCMinutes() !== mi ||
    local.getUTCSeconds() !== s
  ) {
    throw badInput(field, `${INSTANT_FORM}; ${v as string} is not a date and time of the calendar`);
  }
  if (oh > 23 || om > 59) throw badInput(field, `${INSTANT_FORM}; its offset must be at most ±23:59`);
  const at = new Date(local.getTime() - (m[9] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000);
  if (at < INSTANT_RANGE.min || at > INSTANT_RANGE.max) {
    throw badInput(field, `must be between ${INSTANT_RANGE.min.toISOString()} and ${INSTANT_RANGE.max.toISOString()}`);
  }
  return at;
}
