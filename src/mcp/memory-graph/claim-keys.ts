import { createHash } from 'node:crypto';
import { badInput } from '../../errors/domain-error';
import { LIMITS } from '../../validation';

/**
 * The claim keys of the memory graph: every entity, observation and relation the drop-in tools write
 * is one belief whose claim key says what it is about, under the prefix `kg/`:
 *
 *   kg/e/<name>                          the entity exists (value: { name, entityType })
 *   kg/o/<name>/<sha-256 of content>     an observation of the entity (value: { entityName, content })
 *   kg/r/<from>/<relationType>/<to>      a relation (value: { from, relationType, to })
 *
 * Names and relation types are encoded reversibly into what src/validation.ts allows in a key
 * (letters, digits and `:/._-@#+=~`): ASCII letters, digits, `.`, `_` and `-` stand for themselves,
 * every other UTF-8 byte is `~` and two upper-case hex digits (a space is `~20`, `/` is `~2F`, `~` is
 * `~7E`). So `/` only ever separates parts, the key is ASCII (no NFC normalisation can change it),
 * and decoding gives back the exact name, byte for byte. An observation's content can be 4,000
 * characters, longer than a key: its key carries a SHA-256 of the content (hex, first 32 digits) and
 * the content itself is the belief's value and statement.
 */
export const PREFIX = 'kg/';

const PLAIN = /[A-Za-z0-9._-]/;

export function encodePart(s: string): string {
  let out = '';
  for (const ch of s) {
    if (PLAIN.test(ch)) out += ch;
    else for (const b of Buffer.from(ch, 'utf8')) out += `~${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function decodePart(s: string): string {
  if (!/^(?:[A-Za-z0-9._-]|~[0-9A-F]{2})*$/.test(s)) throw new Error(`not an encoded memory-graph part: ${s}`);
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '~') {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(s.charCodeAt(i));
  }
  return Buffer.from(bytes).toString('utf8');
}

/** The key, or BAD_USER_INPUT naming the field when the encoded key is longer than a claim key may be. */
function within(field: string, key: string): string {
  if (key.length > LIMITS.claimKeyMax) {
    throw badInput(
      field,
      `is too long for this memory: encoded as a claim key it takes ${key.length} characters, at most ${LIMITS.claimKeyMax} fit (each character other than A-Z a-z 0-9 . _ - takes 3 per UTF-8 byte)`,
    );
  }
  return key;
}

const observationHash = (content: string) => createHash('sha256').update(content, 'utf8').digest('hex').slice(0, 32);

export const entityKey = (field: string, name: string) => within(field, `${PREFIX}e/${encodePart(name)}`);
export const observationKey = (field: string, entityName: string, content: string) =>
  within(field, `${PREFIX}o/${encodePart(entityName)}/${observationHash(content)}`);
export const relationKey = (field: string, r: { from: string; relationType: string; to: string }) =>
  within(field, `${PREFIX}r/${encodePart(r.from)}/${encodePart(r.relationType)}/${encodePart(r.to)}`);

export type ParsedKey =
  | { kind: 'entity'; name: string }
  | { kind: 'observation'; entityName: string; hash: string }
  | { kind: 'relation'; from: string; relationType: string; to: string };

/** What a memory-graph claim key names, or null for any other key. */
export function parseKey(key: string): ParsedKey | null {
  if (!key.startsWith(PREFIX)) return null;
  const [kind, ...parts] = key.slice(PREFIX.length).split('/');
  try {
    if (kind === 'e' && parts.length === 1) return { kind: 'entity', name: decodePart(parts[0]!) };
    if (kind === 'o' && parts.length === 2 && /^[0-9a-f]{32}$/.test(parts[1]!))
      return { kind: 'observation', entityName: decodePart(parts[0]!), hash: parts[1]! };
    if (kind === 'r' && parts.length === 3)
      return {
        kind: 'relation',
        from: decodePart(parts[0]!),
        relationType: decodePart(parts[1]!),
        to: decodePart(parts[2]!),
      };
  } catch {
    return null;
  }
  return null;
}
