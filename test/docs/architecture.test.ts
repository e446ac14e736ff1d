import fs from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * docs/architecture.md names files and the functions in them; a rename must not leave the page pointing at nothing.
 * Every `src/…` path it names (in back quotes, or at the start of a line of its folder tree) must exist, and every
 * name written beside a file, "`src/x.ts` (`f`, `g`)", must occur in that file.
 */
const PAGE = 'docs/architecture.md';
const text = fs.readFileSync(PAGE, 'utf8');

describe(PAGE, () => {
  it('names only src/ paths that exist', () => {
    const quoted = [...text.matchAll(/`(src\/[^`\s]*)`/g)].map((m) => m[1]!);
    const tree = [...text.matchAll(/^(src\/[\w/.-]+)/gm)].map((m) => m[1]!);
    const paths = [...new Set([...quoted, ...tree])].filter((p) => !/[<…]/.test(p)); // patterns (src/<folder>/…) are not paths
    expect(paths.length).toBeGreaterThan(20);
    expect(paths.filter((p) => !fs.existsSync(p))).toEqual([]);
  });

  it('names only functions that are in the file it names beside them', () => {
    const pairs = [
      ...text.matchAll(/`(src\/[^`\s]+\.ts)` \(((?:`\w+`(?:, )?)+)\)|\(`(src\/[^`\s]+\.ts)`, `(\w+)`\)/g),
    ].flatMap((m) =>
      m[1] ? [...m[2]!.matchAll(/`(\w+)`/g)].map((n) => [m[1]!, n[1]!] as const) : [[m[3]!, m[4]!] as const],
    );
    expect(pairs.length).toBeGreaterThan(12);
    const missing = pairs.filter(
      ([file, name]) => !fs.existsSync(file) || !new RegExp(`\\b${name}\\b`).test(fs.readFileSync(file, 'utf8')),
    );
    expect(missing).toEqual([]);
  });
});
