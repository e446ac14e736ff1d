import fs from 'node:fs';

/**
 * docs/api.md's "operation | scope" table (moved from the README), parsed: operation name → 'authenticated' or its scopes
 * (sorted). Names and scopes are the back-quoted words of each row.
 */
export function documentedScopes(): Map<string, 'authenticated' | string[]> {
  const text = fs.readFileSync('docs/api.md', 'utf8');
  const start = text.indexOf('| operation | scope |');
  if (start < 0) throw new Error('docs/api.md has no "| operation | scope |" table');
  const rows = text.slice(start).split('\n').slice(2);
  const out = new Map<string, 'authenticated' | string[]>();
  for (const row of rows) {
    if (!row.startsWith('|')) break;
    const [, ops, scope] = row.split('|').map((c) => c.trim());
    const names = [...ops!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const scopes = /any valid token/.test(scope!)
      ? 'authenticated'
      : [...scope!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).sort();
    for (const n of names) {
      if (out.has(n)) throw new Error(`docs/api.md lists ${n} twice`);
      out.set(n, scopes);
    }
  }
  return out;
}
