// A clone from a forge has nothing beside it: no file but CI's installers may reach outside the repository,
// and every relative link in README and docs/ must land on a file the repository holds.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const tracked = execFileSync('git', ['ls-files'], { encoding: 'utf8' }).split('\n').filter(Boolean);
// .ci/run and the Citus installer read the vendored Citus source that CI lays beside the clone; nothing else may.
// The path is joined here rather than written out, so this file does not name it itself.
const MAY_REACH_OUT = new Set(['.ci/run', 'scripts/ensure-citus.sh']);
const BESIDE = path.join('..', 'shared');

describe('the repository stands alone', () => {
  it('no tracked file but the installers names the directory beside the clone', () => {
    const reaching = tracked.filter(
      (f) => !MAY_REACH_OUT.has(f) && fs.existsSync(f) && fs.readFileSync(f, 'latin1').includes(BESIDE),
    );
    expect(reaching).toEqual([]);
  });

  it('every relative link in README.md and docs/*.md resolves inside the repository', () => {
    const pages = tracked.filter((f) => f === 'README.md' || (f.startsWith('docs/') && f.endsWith('.md')));
    expect(pages.length).toBeGreaterThan(3);
    const broken: string[] = [];
    for (const page of pages) {
      for (const [, target = ''] of fs.readFileSync(page, 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:|^#/i.test(target)) continue;
        const file = path.normalize(path.join(path.dirname(page), target.split('#')[0] ?? ''));
        if (file.startsWith('..') || !fs.existsSync(file)) broken.push(`${page} → ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
