import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    return d.isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

const quoted = (text: string) => [...text.matchAll(/'([A-Z][A-Z0-9_]{2,})'/g)].map((m) => m[1]!);

/**
 * Every `extensions.code` (and provider-callback `code`) the server can answer, read from its
 * sources: each `code: …` expression's quoted codes, the DomainError codes, the tables that map a
 * status to a code, and the codes parse and validation errors are given (withCode). GraphQL Yoga's
 * own codes are mapped to these (src/server/client-error.ts; test/hostile/edges.test.ts sends them). The typed client and the CLI only read codes, so they are not scanned.
 */
function codesInSources(): Set<string> {
  const found = new Set<string>();
  for (const file of sources(path.join(ROOT, 'src'))) {
    const rel = path.relative(ROOT, file);
    if (rel.startsWith('src/client/') || rel.startsWith('src/cli/')) continue;
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\bcode:\s*([^,}\n]+)/g)) for (const c of quoted(m[1]!)) found.add(c);
    for (const m of text.matchAll(/type DomainErrorCode = ([^;]+);/g)) for (const c of quoted(m[1]!)) found.add(c);
    for (const m of text.matchAll(/const CODE_[A-Z_]+[^=]*=\s*\{([^}]+)\}/g))
      for (const c of quoted(m[1]!)) found.add(c);
    for (const m of text.matchAll(/withCode\(([^)]*)\)/g)) for (const c of quoted(m[1]!)) found.add(c);
  }
  return found;
}

/** The codes docs/security.md lists: the first column of its "Error codes" table. */
function documentedCodes(): Set<string> {
  const doc = fs.readFileSync(path.join(ROOT, 'docs/security.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Error codes'));
  const table = section.slice(0, section.indexOf('\n## ', 3) === -1 ? undefined : section.indexOf('\n## ', 3));
  return new Set([...table.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]!));
}

describe('error codes', () => {
  it('every code the server can answer is in the documented list, and the list names no code the server never answers', () => {
    const inSources = codesInSources();
    expect(inSources.size).toBeGreaterThan(8);
    expect([...inSources].sort()).toEqual([...documentedCodes()].sort());
  });
});
