/**
 * Summarises V8 CPU profiles (`node --cpu-prof`): where the samples of a process went, by function and by module.
 *
 *   npx tsx experiments/cpu_profile_summary.ts <file.cpuprofile | dir> [--top N] [--match REGEX] [--under REGEX]
 *
 * Prints, over every profile given (a directory: each *.cpuprofile in it, summed): the share of samples
 * that were idle, garbage collection and program; the top N functions by SELF samples (% of non-idle samples)
 * and by INCLUSIVE samples (a sample counts once for each distinct function on its stack, so callers
 * include their callees); and the top modules by self samples (a node_modules package, a src/ file, node:
 * internals). `--match` keeps only the inclusive rows whose "function file" matches; `--under` counts only
 * the samples with a matching frame on their stack (what that function and its callees spent, by function). Shares of samples do
 * not depend on the machine's load the way wall time does: a loaded machine samples less often, not
 * differently. The turns bench's clients run in child processes of their own, so a profile of the bench's
 * process is the server's (npm run bench … under `node --cpu-prof --import tsx`).
 */
import fs from 'node:fs';
import path from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

const argv = process.argv.slice(2);
const flag = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const top = Number(flag('top') ?? 25);
const match = flag('match') ? new RegExp(flag('match')!) : null;
const under = flag('under') ? new RegExp(flag('under')!) : null;
const target = argv.find((a, i) => !a.startsWith('--') && !argv[i - 1]?.startsWith('--'));
if (!target) {
  console.error('usage: npx tsx experiments/cpu_profile_summary.ts <file.cpuprofile | dir> [--top N] [--match REGEX]');
  process.exit(2);
}
const files = fs.statSync(target).isDirectory()
  ? fs
      .readdirSync(target)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => path.join(target, f))
  : [target];

/** "node_modules/<pkg>" (scoped too), "src/<file>", "node:<internal>" or the bare url. */
function moduleOf(url: string): string {
  if (!url) return '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const src = url.search(/\/(src|experiments|test)\//);
  if (src >= 0) return url.slice(src + 1);
  return url.startsWith('node:') ? url : url.replace(/^file:\/\//, '');
}
const short = (f: CallFrame) =>
  `${f.functionName || '(anonymous)'} ${moduleOf(f.url)}${f.url ? `:${f.lineNumber + 1}` : ''}`;

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
const modules = new Map<string, number>();
let idle = 0;
let gc = 0;
let total = 0;
for (const file of files) {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  for (const id of p.samples) {
    total++;
    const n = byId.get(id)!;
    const name = n.callFrame.functionName;
    if (name === '(idle)') {
      idle++;
      continue;
    }
    const stack: CallFrame[] = [];
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur))
      stack.push(byId.get(cur)!.callFrame);
    if (under && !stack.some((f) => under.test(short(f)))) continue;
    if (name === '(garbage collector)') gc++;
    const k = short(n.callFrame);
    self.set(k, (self.get(k) ?? 0) + 1);
    const m = moduleOf(n.callFrame.url);
    modules.set(m, (modules.get(m) ?? 0) + 1);
    const seen = new Set<string>();
    for (const f of stack) {
      if (f.functionName === '(root)') continue;
      const key = short(f);
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + 1);
    }
  }
}
const busy = under ? [...modules.values()].reduce((a, b) => a + b, 0) : total - idle;
const pct = (n: number) => `${((100 * n) / busy).toFixed(1).padStart(5)} %`;
const rows = (m: Map<string, number>, filter?: RegExp | null) =>
  [...m.entries()]
    .filter(([k]) => !filter || filter.test(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([k, v]) => `  ${pct(v)}  ${String(v).padStart(7)}  ${k}`)
    .join('\n');

console.log(
  `${files.length} profile(s), ${total} samples: idle ${((100 * idle) / total).toFixed(1)} %, busy ${total - idle}` +
    (under ? `; under /${under.source}/: ${busy} (${((100 * busy) / (total - idle)).toFixed(1)} % of busy)` : ''),
);
console.log(`garbage collector ${pct(gc)} of ${under ? 'those' : 'busy'} samples`);
console.log(`\ntop ${top} functions by SELF samples (% of busy):\n${rows(self)}`);
console.log(`\ntop ${top} functions by INCLUSIVE samples (% of busy):\n${rows(inclusive, match)}`);
console.log(`\ntop ${top} modules by SELF samples (% of busy):\n${rows(modules)}`);
