import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { matches, normalise, steps } from './doc-replay';

// The docs test is only as strict as these: an edited output must not match what the run printed.
describe('doc-replay', () => {
  const printed = '{"data":{"retractBelief":{"id":"UmV0cmFjdGlvbjox","totals":{"beliefsRetracted":3}}}}\n';

  it('a shown output matches the run it came from, whatever its ids, times, tokens, cursors and ports', () => {
    expect(
      matches('{"data":{"retractBelief":{"id":"UmV0cmFjdGlvbjoy","totals":{"beliefsRetracted":3}}}}', printed),
    ).toBe(true);
    expect(
      normalise(
        'at 2026-12-01T09:33:35.740Z on http://127.0.0.1:34911/graphql with rt_OJaaXxUxUP0pI0gQWjUeSE6rnL8n7KAWmgBfW8S0n98',
      ),
    ).toBe('at <time> on http://127.0.0.1:PORT/graphql with rt_<token>');
    expect(normalise('{"snapshot":"eyJ2IjoxfQ","id":"QmVsaWVmOjE="}')).toBe(
      '{"snapshot":"<cursor>","id":"<Belief id>"}',
    );
  });

  it('an edited figure, a missing line or an extra line does not match', () => {
    expect(
      matches('{"data":{"retractBelief":{"id":"UmV0cmFjdGlvbjox","totals":{"beliefsRetracted":2}}}}', printed),
    ).toBe(false);
    expect(matches('a\nb\nc', 'a\nb\n')).toBe(false);
    expect(matches('a\nb', 'a\nb\nc\n')).toBe(false);
    expect(matches('a\nb', 'a\nb\n')).toBe(true);
  });

  it('… leaves out text within a line, or whole lines on a line of its own, and nothing else', () => {
    expect(matches('{"result":{"text":"Receipt …"},…', '{"result":{"text":"Receipt of many words"},"more":1}')).toBe(
      true,
    );
    expect(matches('…\n6. The receipt\n…\n  total $1', 'intro\nmore\n6. The receipt\ntable\nrows\n  total $1\n')).toBe(
      true,
    );
    expect(matches('…\n6. The receipt\n…\n  total $2', 'intro\n6. The receipt\n  total $1\n')).toBe(false);
    expect(matches('Receipt … done', 'Receipt of\nmany lines done')).toBe(false);
  });

  it("reads a page's blocks as steps: a command with its output, a server, a file, a skip with its reason, and an orphan output", () => {
    const page = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'doc-replay-')), 'page.md');
    fs.writeFileSync(
      page,
      [
        '```sh server',
        'npm start',
        '```',
        '```sh',
        'curl x',
        '```',
        'prose',
        '```json',
        '{"a":1}',
        '```',
        '```js',
        '// feed.mjs — a feed',
        'x()',
        '```',
        '```text',
        '$ node feed.mjs',
        'out',
        '```',
        '```sh skip: a deployment',
        'curl db.internal',
        '```',
        '```text',
        'nothing made me',
        '```',
      ].join('\n'),
    );
    expect(steps(page).map((s) => s.kind)).toEqual(['server', 'run', 'file', 'run', 'skip', 'orphan']);
    const [, curl, , node, skip] = steps(page);
    expect(curl).toMatchObject({ script: 'curl x', expect: { text: '{"a":1}' } });
    expect(node).toMatchObject({ script: 'node feed.mjs', expect: { text: 'out' } });
    expect(skip).toMatchObject({ reason: 'a deployment' });
    fs.rmSync(path.dirname(page), { recursive: true });
  });
});
