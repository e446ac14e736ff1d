import fs from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * One vocabulary: every word README's Words table defines, and every term of docs/design.md's table, is a term of the
 * glossary at the top of src/core.ts (the one a reader of the code meets first), so a word added to one page and not
 * the code fails here.
 */
/** The first column of the table whose header row is `header`. */
const tableTerms = (file: string, header: string): string[] => {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const start = lines.indexOf(header);
  expect(start, `${file} has the table ${header}`).toBeGreaterThan(-1);
  const end = lines.findIndex((l, i) => i > start && !l.startsWith('|'));
  return lines.slice(start + 2, end).map((r) => r.split('|')[1]!.trim());
};
const glossary = [...fs.readFileSync('src/core.ts', 'utf8').matchAll(/^ \* {2}- ([a-z ]+):/gm)].map((m) => m[1]!);

describe('the glossary in src/core.ts', () => {
  it.each([
    ['README.md', '| word | meaning |'],
    ['docs/design.md', '| term | meaning |'],
  ])('has every term of %s', (file, heading) => {
    const terms = tableTerms(file, heading);
    expect(terms.length).toBeGreaterThan(8);
    // README's "claim" is the glossary's "claim key": a term may be the start of the glossary's.
    expect(terms.filter((t) => !glossary.some((g) => g === t || g.startsWith(`${t} `)))).toEqual([]);
  });
});
