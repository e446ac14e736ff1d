// The layering rules of .dependency-cruiser.cjs are only as true as the folders they name. A rule that names a folder
// which was renamed away still passes (it matches nothing), and a new folder of src/ that no rule names has no layer:
// both pass `npm run lint:deps` silently. This reads the config itself (what depcruise reads) and checks both ways.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { RegExpParser, type AST } from '@eslint-community/regexpp';
import { describe, expect, it } from 'vitest';

interface Side {
  path?: string | string[];
  pathNot?: string | string[];
}
interface Rule {
  name: string;
  from: Side;
  to: Side;
}
const config = createRequire(import.meta.url)('../../.dependency-cruiser.cjs') as { forbidden: Rule[] };
const ROOTS = ['src/', 'dashboard/', 'test/', 'experiments/'];

/** Every path pattern of a rule, both sides, path and pathNot. */
const patternsOf = (rule: Rule): string[] =>
  [rule.from, rule.to].flatMap((side) => [side.path ?? [], side.pathNot ?? []].flat());
const allPatterns = [...new Set(config.forbidden.flatMap(patternsOf))];

/** Files below a folder, relative to it. */
const filesUnder = (dir: string): string[] =>
  fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => fs.statSync(path.join(dir, f)).isFile());

const STOP = '\u0000';
/**
 * The literal strings a pattern spells, one per alternative: `^src/(a|b)/` gives `src/a/` and `src/b/`. An element
 * that is not a literal (a class, a quantifier, a look-ahead) ends the string there (marked STOP): what comes before
 * it is still a folder the pattern names. `$` is kept, so `src/x\.ts$` reads as the file src/x.ts.
 */
function spell(alternatives: AST.Alternative[]): string[] {
  return alternatives.flatMap((alt) =>
    alt.elements.reduce<string[]>(
      (heads, el) => heads.flatMap((head) => (head.endsWith(STOP) ? [head] : piece(el).map((p) => head + p))),
      [''],
    ),
  );
}
function piece(el: AST.Element): string[] {
  if (el.type === 'Character') return [String.fromCodePoint(el.value)];
  if (el.type === 'Group' || el.type === 'CapturingGroup') return spell(el.alternatives);
  if (el.type === 'Assertion' && el.kind === 'start') return [''];
  if (el.type === 'Assertion' && el.kind === 'end') return ['$'];
  return [STOP];
}

/** The folders and files a pattern names under the repository's roots. */
function named(pattern: string): { dirs: string[]; files: string[] } {
  const spelled = spell(new RegExpParser().parsePattern(pattern).alternatives).filter((s) =>
    ROOTS.some((r) => s.startsWith(r)),
  );
  return {
    files: spelled.filter((s) => s.endsWith('$')).map((s) => s.slice(0, -1)),
    dirs: spelled.filter((s) => !s.endsWith('$')).map((s) => s.slice(0, s.lastIndexOf('/') + 1)),
  };
}

describe('.dependency-cruiser.cjs', () => {
  it('npm run lint:deps cruises src/ and dashboard/src/', () => {
    const script = (JSON.parse(fs.readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts[
      'lint:deps'
    ]!;
    expect(script.split(/\s+/)).toEqual(expect.arrayContaining(['depcruise', 'src', 'dashboard/src']));
  });

  it('every folder of src/ is named by a rule', () => {
    // A pattern names a folder when it tells one of the folder's files apart from the same file in a folder that does
    // not exist: `^src/` names no folder in particular; `^src/(?!client/)` names client.
    const folders = fs.readdirSync('src', { withFileTypes: true }).filter((d) => d.isDirectory());
    expect(folders.length).toBeGreaterThan(15);
    const unnamed = folders
      .map((d) => d.name)
      .filter((folder) => {
        const files = filesUnder(path.join('src', folder));
        return !allPatterns.some((p) => {
          const re = new RegExp(p);
          return files.some((f) => re.test(`src/${folder}/${f}`) !== re.test(`src/no-such-folder/${f}`));
        });
      });
    expect(unnamed).toEqual([]);
  });

  it('every folder and file a rule names exists', () => {
    const missing: string[] = [];
    let checked = 0;
    for (const rule of config.forbidden) {
      for (const pattern of patternsOf(rule)) {
        const { dirs, files } = named(pattern);
        checked += dirs.length + files.length;
        for (const d of dirs)
          if (!fs.existsSync(d) || !fs.statSync(d).isDirectory()) missing.push(`${rule.name}: ${d}`);
        for (const f of files) if (!fs.existsSync(f) || !fs.statSync(f).isFile()) missing.push(`${rule.name}: ${f}`);
      }
    }
    // The spelling reads the alternations themselves: DOMAIN alone names more than ten folders.
    expect(checked).toBeGreaterThan(40);
    expect(missing).toEqual([]);
  });
});
