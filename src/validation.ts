import { badInput } from './errors/domain-error';

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

/** A non-empty string within `max` characters, with no NUL/control characters and no lone surrogates. */
export function text(field: string, v: unknown, max: number, opts: { multiline?: boolean } = {}): string {
  if (typeof v !== 'string') throw badInput(field, 'must be a string');
  if (v.trim().length === 0) throw badInput(field, 'must not be empty');
  if (v.length > max) throw badInput(field, `must be at most ${max} characters (got ${v.length})`);
  if (v.includes('\u0000')) throw badInput(field, 'must not contain NUL characters');
  if (!opts.multiline && CONTROL.test(v)) throw badInput(field, 'must not contain control characters');
  if (LONE_SURROGATE.test(v)) throw badInput(field, 'must be valid Unicode (no lone surrogates)');
  return v;
}

export function optionalText(field: string, v: unknown, max: number, opts: { multiline?: boolean } = {}): string | null {
  if (v === undefined || v === null) return null;
  return text(field, v, max, opts);
}

const CLAIM_KEY = /^[\p{L}\p{N}][\p{L}\p{N}:/._\-@#+=~]*$/u;
/**
 * Claim keys: 1–256 characters, starting with a letter or digit, then letters, digits and
 * `:/._-@#+=~`. A key is normalised to Unicode NFC before any rule and before it is stored or
 * compared, so a composed "é" and "e" + combining accent name one claim (the decomposed form's
 * combining mark would otherwise be refused, or a second spelling would be a second claim).
 */
export function claimKey(field: string, v: unknown): string {
  const s = text(field, typeof v === 'string' && !LONE_SURROGATE.test(v) ? v.normalize('NFC') : v, LIMITS.claimKeyMax);
  if (!CLAIM_KEY.test(s)) {
    throw badInput(field, 'must start with a letter or digit and contain only letters, digits and : / . _ - @ # + = ~ (no spaces)');
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
  try {
    s = JSON.stringify(v);
  } catch {
    throw badInput(field, 'must be JSON-serialisable');
  }
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
  if (typeof a !== 'number' || !Number.isInteger(a)) throw badInput(`${field}.amountMinor`, 'must be an integer number of minor units');
  if (a <= 0) throw badInput(`${field}.amountMinor`, 'must be positive');
  if (a > LIMITS.amountMax) throw badInput(`${field}.amountMinor`, `must be at most ${LIMITS.amountMax}`);
  if (typeof m.currency !== 'string' || !/^[A-Z]{3}$/.test(m.currency)) {
    throw badInput(`${field}.currency`, 'must be three capital letters (ISO 4217), e.g. USD');
  }
  if (!CURRENCIES.has(m.currency)) throw badInput(`${field}.currency`, `must be an ISO 4217 currency code, e.g. USD; ${m.currency} is not one`);
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
