import fs from 'node:fs';

/**
 * Reads a Markdown page as a script the docs test replays: its fenced blocks, in order, become steps. The convention
 * (the info string is the text after a fence's language: GitHub shows only the language, so readers never see it):
 *
 * - ```sh — a command: run in bash from the checkout's root. Variables it sets (TOKEN=…) hold for the later blocks,
 *   as in one shell session. When the next fenced block is an output block (```text or ```json with no info), the
 *   command's stdout must match it.
 * - ```sh server — starts the server: the test runs the block's other lines, then starts the built server (what
 *   `npm start` runs) with the variables set so far and those the `npm start` line sets, on a free port and a fresh
 *   data directory. `127.0.0.1:4000` and `localhost:4000` in every later block stand for that server.
 * - ```sh background — a command left running (a subscriber in a second terminal); the test goes on once it printed
 *   a line on stderr. Its stdout must match the next ```text background block, once it has exited.
 * - ```js / ```ts whose first line is `// <file> — …` — written to <file> in the checkout's root, for a later command.
 * - an output block whose first line is `$ <command>` — the command is run and its stdout must match the rest.
 * - ```<language> skip: <reason> — not replayed; the test lists it as skipped with the reason.
 * Any other output block fails the test: an output nothing produces cannot be checked.
 */
export type Step =
  | { kind: 'run'; line: number; script: string; expect: Shown | null }
  | { kind: 'server'; line: number; script: string }
  | { kind: 'background'; line: number; script: string }
  | { kind: 'awaitBackground'; line: number; expect: Shown }
  | { kind: 'file'; line: number; name: string; body: string }
  | { kind: 'skip'; line: number; reason: string }
  | { kind: 'orphan'; line: number; text: string };

/** An output as shown, with the line of the page it starts on. */
export interface Shown {
  line: number;
  text: string;
}

interface Block {
  line: number;
  lang: string;
  info: string;
  body: string;
}

function blocks(markdown: string): Block[] {
  const out: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    while (++i < lines.length && !/^```\s*$/.test(lines[i]!)) body.push(lines[i]!);
    out.push({ line: start + 1, lang: open[1]!, info: open[2]!.trim(), body: body.join('\n') });
  }
  return out;
}

const isOutput = (b: Block | undefined) => !!b && (b.lang === 'text' || b.lang === 'json');

export function steps(file: string): Step[] {
  const bs = blocks(fs.readFileSync(file, 'utf8'));
  const out: Step[] = [];
  const paired = new Set<Block>();
  for (const [i, b] of bs.entries()) {
    if (paired.has(b)) continue;
    const skip = /^skip:?\s*(.*)$/.exec(b.info);
    if (skip) {
      out.push({ kind: 'skip', line: b.line, reason: skip[1] || 'no reason given' });
    } else if (b.lang === 'sh' && b.info === 'server') {
      out.push({ kind: 'server', line: b.line, script: b.body });
    } else if (b.lang === 'sh' && b.info === 'background') {
      out.push({ kind: 'background', line: b.line, script: b.body });
    } else if (b.lang === 'sh') {
      const next = bs[i + 1];
      const pair = isOutput(next) && next!.info === '' && !next!.body.startsWith('$ ') ? next! : null;
      if (pair) paired.add(pair);
      out.push({ kind: 'run', line: b.line, script: b.body, expect: pair && { line: pair.line, text: pair.body } });
    } else if (isOutput(b) && b.info === 'background') {
      out.push({ kind: 'awaitBackground', line: b.line, expect: { line: b.line, text: b.body } });
    } else if (isOutput(b) && b.body.startsWith('$ ')) {
      const [command, ...rest] = b.body.split('\n');
      out.push({
        kind: 'run',
        line: b.line,
        script: command!.slice(2),
        expect: { line: b.line, text: rest.join('\n') },
      });
    } else if (isOutput(b)) {
      out.push({ kind: 'orphan', line: b.line, text: b.body });
    } else {
      const named = /^\/\/ (\S+\.(?:mjs|js|ts)) — /.exec(b.body);
      if (named) out.push({ kind: 'file', line: b.line, name: named[1]!, body: b.body });
      else out.push({ kind: 'orphan', line: b.line, text: b.body });
    }
  }
  return out;
}

/** A global id (base64 of `Type:n`), as the API issues them. */
function globalId(s: string): string | null {
  const decoded = Buffer.from(s, 'base64').toString('utf8');
  return /^[A-Z][A-Za-z]+:\d+$/.test(decoded) ? decoded.split(':')[0]! : null;
}

/**
 * What may differ between two runs of the same story, replaced by a placeholder on both sides: ports, instants,
 * tokens, snapshots and cursors, and global ids (their type is kept). Numbers, scores, money and the order of
 * everything stay as printed.
 */
export function normalise(text: string): string {
  return text
    .replace(/\r/g, '')
    .replace(/(127\.0\.0\.1|localhost):\d+/g, '$1:PORT')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, '<time>')
    .replace(/rt_[A-Za-z0-9_-]{16,}/g, 'rt_<token>')
    .replace(/("(?:snapshot|cursor|endCursor)":\s*")[^"]*"/g, '$1<cursor>"')
    .replace(/((?:snapshot|cursor|endCursor): ')[^']*'/g, "$1<cursor>'")
    .replace(/[A-Za-z0-9+/]{8,}={0,2}/g, (m) => {
      const type = globalId(m);
      return type ? `<${type} id>` : m;
    })
    .split('\n')
    .map((l) => l.trimEnd())
    .join('\n')
    .trim();
}

/**
 * Whether `printed` is what `shown` shows. In a shown output `…` stands for text left out: on a line of its own,
 * any number of lines; within a line, any text on that line.
 */
export function matches(shown: string, printed: string): boolean {
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = normalise(shown)
    .split('\n')
    .map((l) => (l.trim() === '…' ? '(?:[^\\n]*\\n)*?' : `${l.split('…').map(esc).join('[^\\n]*?')}\\n`))
    .join('');
  return new RegExp(`^${pattern}$`).test(`${normalise(printed)}\n`);
}
