// How a LangGraph item's (namespace, key) becomes a RETRACT claim key and back. Browser-safe (TextEncoder only).
//
// Layout: `<root>/<label 1>/…/<label n>/#<key>`. Every label and the key are written character for character when
// they are ASCII letters, digits or one of `: . _ - @ + =`; any other character is written `~HH` per UTF-8 byte
// (upper-case hex), so `/`, `#` and `~` never appear inside a label or a key and the claim key is ASCII (the NFC
// normalisation the server applies to claim keys cannot change it). Hence:
// - the encoding is reversible and one-to-one: every string (any Unicode, `/`, spaces, the empty key) has exactly
//   one claim key, and a claim key that does not re-encode to itself is not an item's;
// - a namespace prefix `[a, b]` is exactly the claim-key prefix `<root>/a/b/`: each label ends with `/`, so
//   `['users']` does not match `['users2']`, and the namespace `['users']` itself matches;
// - RETRACT's rules for claim keys (src/validation.ts: 1–256 characters, a letter or digit first, then letters,
//   digits and `: / . _ - @ # + = ~`) hold for every claim key built here; one longer than 256 is refused before
//   anything is sent.

/** The longest claim key RETRACT accepts (src/validation.ts LIMITS.claimKeyMax). */
export const CLAIM_KEY_MAX = 256;

const LITERAL = /^[A-Za-z0-9:._@+=-]$/;
const ROOT = /^[A-Za-z0-9][A-Za-z0-9:._@+=-]*$/;
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder('utf-8', { fatal: true });

/** A label or key written with only literal characters and `~HH` escapes. */
export function encodePart(s: string): string {
  let out = '';
  for (const ch of s) {
    if (LITERAL.test(ch)) out += ch;
    else for (const b of utf8.encode(ch)) out += `~${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The string an encoded part stands for, or null when it is not one encodePart writes. */
export function decodePart(s: string): string | null {
  const bytes: number[] = [];
  for (let i = 0; i < s.length;) {
    if (s[i] === '~') {
      const hex = s.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) return null;
      bytes.push(parseInt(hex, 16));
      i += 3;
    } else {
      bytes.push(s.charCodeAt(i));
      i += 1;
    }
  }
  let decoded: string;
  try {
    decoded = fromUtf8.decode(new Uint8Array(bytes));
  } catch {
    return null;
  }
  return encodePart(decoded) === s ? decoded : null;
}

/** Checks a store's root: a claim-key start of literal characters, beginning with a letter or digit. */
export function checkRoot(root: string): string {
  if (!ROOT.test(root) || root.length > 64) {
    throw new RangeError(
      `RetractStore: root "${root}" must be 1–64 characters, a letter or digit first, then letters, digits and : . _ - @ + =`,
    );
  }
  return root;
}

/** The claim-key prefix every item of `namespacePrefix` (and of the namespaces below it) starts with. */
export function namespacePrefixKey(root: string, namespacePrefix: readonly string[]): string {
  return `${root}/${namespacePrefix.map((l) => `${encodePart(l)}/`).join('')}`;
}

/** The claim key of an item; a RangeError naming the namespace and key when it would exceed 256 characters. */
export function itemClaimKey(root: string, namespace: readonly string[], key: string): string {
  const claimKey = `${namespacePrefixKey(root, namespace)}#${encodePart(key)}`;
  if (claimKey.length > CLAIM_KEY_MAX) {
    throw new RangeError(
      `RetractStore: namespace ${JSON.stringify(namespace)} with key ${JSON.stringify(key)} encodes to a claim key of ${claimKey.length} characters; RETRACT allows at most ${CLAIM_KEY_MAX}`,
    );
  }
  return claimKey;
}

/** The (namespace, key) a claim key names, or null when it is not an item's claim key under `root`. */
export function parseItemClaimKey(root: string, claimKey: string): { namespace: string[]; key: string } | null {
  if (!claimKey.startsWith(`${root}/`)) return null;
  const parts = claimKey.slice(root.length + 1).split('/');
  const last = parts.pop()!;
  if (!last.startsWith('#') || parts.length === 0) return null;
  const namespace = parts.map(decodePart);
  const key = decodePart(last.slice(1));
  if (key === null || namespace.some((l) => l === null || l === '')) return null;
  return { namespace: namespace as string[], key };
}
