/**
 * Scores an adjudicator against the labelled contradiction cases.
 *
 *   tsx experiments/adjudicator_eval.ts [--adjudicator heuristic|bedrock] [--cases FILE] [--out FILE]
 *
 * The adjudicator comes from `--adjudicator`, else `RETRACT_ADJUDICATOR` (default heuristic). Prints a table,
 * the score and every miss with its rationale; writes results/adjudicator_eval.json.
 * Exit codes: 0 all cases pass; 1 some case fails; 2 bedrock requested but no region/credentials resolvable;
 * 3 bad arguments or data.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import {
  createAdjudicator,
  parseAdjudicatorKind,
  VERDICTS,
  type AdjudicationCase,
  type Verdict,
} from '../src/adjudication';
import { checkBedrockAccess } from '../src/embedding/bedrock-transport';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');

const Side = z.object({
  statement: z.string().min(1),
  value: z.unknown(),
  evidence: z.string().nullable(),
  author: z.string().min(1),
  at: z.iso.datetime({ offset: true }).optional(),
  source: z.string().optional(),
  reliability: z.number().min(0).max(1).optional(),
});
const VerdictSchema = z.enum(VERDICTS as [Verdict, ...Verdict[]]);
const CasesFile = z.object({
  description: z.string(),
  version: z.number(),
  cases: z
    .array(
      z.object({
        id: z.string().min(1),
        category: z.string().min(1),
        case: z.object({ claimKey: z.string().min(1), existing: Side, proposed: Side }),
        expected: VerdictSchema,
        why: z.string().min(1),
      }),
    )
    .min(1),
});

function fail(code: number, message: string): never {
  console.error(message);
  process.exit(code);
}

async function main(): Promise<void> {
  let args;
  try {
    args = parseArgs({
      options: {
        adjudicator: { type: 'string' },
        cases: { type: 'string', default: path.join(root, 'experiments/data/adjudicator_cases.json') },
        out: { type: 'string', default: path.join(root, 'results/adjudicator_eval.json') },
      },
    }).values;
  } catch (e) {
    fail(
      3,
      `adjudicator_eval: ${(e as Error).message}\nusage: tsx experiments/adjudicator_eval.ts [--adjudicator heuristic|bedrock] [--cases FILE] [--out FILE]`,
    );
  }

  const env = { ...process.env };
  if (args.adjudicator !== undefined) env.RETRACT_ADJUDICATOR = args.adjudicator;
  let kind;
  try {
    kind = parseAdjudicatorKind(
      env.RETRACT_ADJUDICATOR,
      args.adjudicator !== undefined ? '--adjudicator' : 'RETRACT_ADJUDICATOR',
    );
  } catch (e) {
    fail(3, `adjudicator_eval: ${(e as Error).message}`);
  }

  const parsed = CasesFile.safeParse(JSON.parse(fs.readFileSync(args.cases, 'utf8')));
  if (!parsed.success) fail(3, `adjudicator_eval: ${args.cases} is invalid:\n${z.prettifyError(parsed.error)}`);
  const cases = parsed.data.cases;
  const dup = cases.map((c) => c.id).find((id, i, all) => all.indexOf(id) !== i);
  if (dup) fail(3, `adjudicator_eval: duplicate case id ${dup}`);

  if (kind === 'bedrock') {
    const access = await checkBedrockAccess({ env });
    if (!access.ok) {
      fail(
        2,
        `adjudicator_eval: the bedrock adjudicator was requested, but ${access.reason}.\n` +
          'Nothing was evaluated. Configure AWS credentials and a region (AWS_PROFILE/AWS_ACCESS_KEY_ID, AWS_REGION), ' +
          'or run with --adjudicator heuristic.',
      );
    }
    console.log(`bedrock: region ${access.region}, ${access.credentials}`);
  }

  const adjudicator = await createAdjudicator(env);
  const rows: Array<{
    id: string;
    category: string;
    expected: Verdict;
    got: Verdict;
    ok: boolean;
    rationale: string;
    why: string;
    ms: number;
  }> = [];
  for (const c of cases) {
    const t0 = performance.now();
    const r = await adjudicator.adjudicate(c.case as AdjudicationCase);
    rows.push({
      id: c.id,
      category: c.category,
      expected: c.expected,
      got: r.verdict,
      ok: r.verdict === c.expected,
      rationale: r.rationale,
      why: c.why,
      ms: Math.round(performance.now() - t0),
    });
  }
  (adjudicator as { destroy?: () => void }).destroy?.();

  const head = ['id', 'category', 'expected', 'got', 'ok'] as const;
  const cells = rows.map((r) => [r.id, r.category, r.expected, r.got, r.ok ? 'ok' : 'MISS']);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
  const line = (xs: readonly string[]) =>
    xs
      .map((x, i) => x.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  console.log(`adjudicator: ${adjudicator.id}   cases: ${path.relative(root, args.cases)}`);
  console.log(line(head));
  console.log(line(widths.map((w) => '-'.repeat(w))));
  for (const row of cells) console.log(line(row));

  const passed = rows.filter((r) => r.ok).length;
  const score = passed / rows.length;
  console.log(`\nscore: ${passed}/${rows.length} = ${(score * 100).toFixed(1)}%`);

  const byVerdict = VERDICTS.map((v) => {
    const of = rows.filter((r) => r.expected === v);
    return `${v} ${of.filter((r) => r.ok).length}/${of.length}`;
  });
  console.log(`by expected verdict: ${byVerdict.join(', ')}`);

  const misses = rows.filter((r) => !r.ok);
  if (misses.length > 0) {
    console.log(`\nmisses (${misses.length}):`);
    for (const m of misses) {
      console.log(`- ${m.id} [${m.category}] expected ${m.expected}, got ${m.got}`);
      console.log(`    adjudicator: ${m.rationale}`);
      console.log(`    label:       ${m.why}`);
    }
  }

  fs.mkdirSync(path.dirname(args.out), { recursive: true });
  fs.writeFileSync(
    args.out,
    `${JSON.stringify(
      {
        adjudicator: adjudicator.id,
        casesFile: path.relative(root, args.cases),
        at: new Date().toISOString(),
        total: rows.length,
        passed,
        score,
        rows,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`\nwrote ${path.relative(process.cwd(), args.out) || args.out}`);
  process.exitCode = misses.length > 0 ? 1 : 0;
}

main().catch((e: unknown) => fail(3, `adjudicator_eval: ${(e as Error)?.stack ?? String(e)}`));
