import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * docs/architecture.md names files and the functions in them; a rename must not leave the page pointing at nothing.
 * Every path it names in back quotes (src/, dashboard/, test/, scripts/, db/, docs/) or at the start of a line of its
 * folder tree must exist; every file the tree names inside a folder's entry ("engine.ts", "belief.repository") must be
 * in that folder; every folder of src/ must have an entry; and every name written beside a file, "`src/x.ts` (`f`,
 * `g`)", must occur in that file.
 */
const PAGE = 'docs/architecture.md';
const text = fs.readFileSync(PAGE, 'utf8');

describe(PAGE, () => {
  it('names only paths that exist', () => {
    const quoted = [...text.matchAll(/`((?:src|dashboard|test|scripts|db|docs)\/[^`\s]*)`/g)].map((m) => m[1]!);
    const tree = [...text.matchAll(/^(src\/[\w/.-]+)/gm)].map((m) => m[1]!);
    const paths = [...new Set([...quoted, ...tree])].filter((p) => !/[<…]/.test(p)); // patterns (src/<folder>/…) are not paths
    expect(paths.length).toBeGreaterThan(20);
    expect(paths.filter((p) => !fs.existsSync(p))).toEqual([]);
  });

  // The folder tree: an entry starts at a line's first column with its folders; its indented lines continue it.
  const tree = text.slice(text.indexOf('## Folders')).split('```')[1]!;
  const entries = tree.split(/\n(?=\S)/).map((entry) => ({
    folders: [...entry.matchAll(/^(\S+\/)(?:, (\S+\/))?/g)].flatMap((m) =>
      [m[1]!, m[2]].filter((f) => f !== undefined),
    ),
    text: entry,
  }));

  it('has an entry for every folder of src/', () => {
    const listed = new Set(entries.flatMap((e) => e.folders));
    const folders = fs.readdirSync('src', { withFileTypes: true }).filter((d) => d.isDirectory());
    expect(folders.map((d) => `src/${d.name}/`).filter((f) => !listed.has(f))).toEqual([]);
  });

  it('names in each folder entry only files that are in that folder', () => {
    const named = entries.flatMap((e) =>
      [...e.text.matchAll(/\b([\w/.-]+\.ts|[\w-]+\.repository|[\w-]+\.service)\b(?!\.)/g)].map((m) => ({
        folders: e.folders,
        file: /\.(repository|service)$/.test(m[1]!) ? `${m[1]}.ts` : m[1]!,
      })),
    );
    expect(named.length).toBeGreaterThan(40);
    // A name is read in its folder, in that folder's src/ (dashboard/), or from src/ ("derivation/resettle.ts") or the root.
    const missing = named.filter(
      ({ folders, file }) =>
        ![...folders.flatMap((f) => [f, `${f}src/`]), 'src/', ''].some((dir) => fs.existsSync(path.join(dir, file))),
    );
    expect(missing.map(({ folders, file }) => `${folders.join(', ')} ${file}`)).toEqual([]);
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
