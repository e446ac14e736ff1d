/**
 * How well does embedding similarity track identity? (It does not, which is why claim keys decide it.)
 *
 *   tsx experiments/identity_eval.ts [--embedder local|bedrock] [--pairs FILE] [--out FILE]
 *
 * The embedder comes from `--embedder`, else `RETRACT_EMBEDDER` (default local). Reports, per group, the
 * distribution of cosine similarity, the paraphrase–negation gap, and how often a different entity sits
 * nearer than the same fact reworded; writes results/identity_eval.json.
 * Exit codes: 0 done; 2 bedrock requested but no region/credentials resolvable; 3 bad arguments, data or
 * an embedder failure.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { cosineSimilarity, createEmbedder, parseEmbedderKind } from '../src/embedding';
import { checkBedrockAccess } from '../src/embedding/bedrock-transport';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');

const Pair = z.object({ id: z.string().min(1), a: z.string().min(1), b: z.string().min(1) });
const PairsFile = z.object({
  description: z.string(),
  version: z.number(),
  paraphrase: z.array(Pair).min(1),
  negation: z.array(Pair).min(1),
  differentEntity: z.array(Pair.extend({ aReworded: z.string().min(1) })).min(1),
});

function fail(code: number, message: string): never {
  console.error(message);
  process.exit(code);
}

/** Quantile by linear interpolation between closest ranks (the common "type 7" definition). */
function quantile(sorted: number[], q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

type Summary = { n: number; min: number; p25: number; median: number; p75: number; max: number };
function summarise(xs: number[]): Summary {
  const s = [...xs].sort((a, b) => a - b);
  return {
    n: s.length,
    min: s[0]!,
    p25: quantile(s, 0.25),
    median: quantile(s, 0.5),
    p75: quantile(s, 0.75),
    max: s[s.length - 1]!,
  };
}

const f3 = (x: number) => x.toFixed(3);
const pct = (num: number, den: number) => `${num}/${den} = ${((100 * num) / den).toFixed(1)}%`;

async function main(): Promise<void> {
  let args;
  try {
    args = parseArgs({
      options: {
        embedder: { type: 'string' },
        pairs: { type: 'string', default: path.join(root, 'experiments/data/identity_pairs.json') },
        out: { type: 'string', default: path.join(root, 'results/identity_eval.json') },
      },
    }).values;
  } catch (e) {
    fail(
      3,
      `identity_eval: ${(e as Error).message}\nusage: tsx experiments/identity_eval.ts [--embedder local|bedrock] [--pairs FILE] [--out FILE]`,
    );
  }

  const env = { ...process.env };
  if (args.embedder !== undefined) env.RETRACT_EMBEDDER = args.embedder;
  let kind;
  try {
    kind = parseEmbedderKind(env.RETRACT_EMBEDDER, args.embedder !== undefined ? '--embedder' : 'RETRACT_EMBEDDER');
  } catch (e) {
    fail(3, `identity_eval: ${(e as Error).message}`);
  }

  const parsed = PairsFile.safeParse(JSON.parse(fs.readFileSync(args.pairs, 'utf8')));
  if (!parsed.success) fail(3, `identity_eval: ${args.pairs} is invalid:\n${z.prettifyError(parsed.error)}`);
  const data = parsed.data;

  if (kind === 'bedrock') {
    const access = await checkBedrockAccess({ env });
    if (!access.ok) {
      fail(
        2,
        `identity_eval: the bedrock embedder was requested, but ${access.reason}.\n` +
          'Nothing was embedded. Configure AWS credentials and a region (AWS_PROFILE/AWS_ACCESS_KEY_ID, AWS_REGION), ' +
          'or run with --embedder local.',
      );
    }
    console.log(`bedrock: region ${access.region}, ${access.credentials}`);
  }

  const embedder = await createEmbedder(env);
  const texts = [
    ...new Set([
      ...data.paraphrase.flatMap((p) => [p.a, p.b]),
      ...data.negation.flatMap((p) => [p.a, p.b]),
      ...data.differentEntity.flatMap((p) => [p.a, p.b, p.aReworded]),
    ]),
  ];
  let vectors: number[][];
  try {
    vectors = await embedder.embed(texts);
  } catch (e) {
    fail(3, `identity_eval: embedding failed: ${(e as Error).message}`);
  } finally {
    (embedder as { destroy?: () => void }).destroy?.();
  }
  const vec = new Map(texts.map((t, i) => [t, vectors[i]!]));
  const cos = (a: string, b: string) => cosineSimilarity(vec.get(a)!, vec.get(b)!);

  const para = data.paraphrase.map((p) => ({ id: p.id, cosine: cos(p.a, p.b) }));
  const neg = data.negation.map((p) => ({ id: p.id, cosine: cos(p.a, p.b) }));
  const ent = data.differentEntity.map((p) => ({
    id: p.id,
    otherEntity: cos(p.a, p.b),
    reworded: cos(p.a, p.aReworded),
  }));

  const groups = {
    paraphrase: summarise(para.map((x) => x.cosine)),
    negation: summarise(neg.map((x) => x.cosine)),
    differentEntity: summarise(ent.map((x) => x.otherEntity)),
    sameEntityReworded: summarise(ent.map((x) => x.reworded)),
  };

  const medianGap = groups.paraphrase.median - groups.negation.median;
  const negAboveParaMedian = neg.filter((x) => x.cosine > groups.paraphrase.median).length;
  const matchedNearer = ent.filter((x) => x.otherEntity > x.reworded).length;
  let crossNearer = 0;
  for (const e of ent) for (const p of para) if (e.otherEntity > p.cosine) crossNearer++;
  const crossTotal = ent.length * para.length;
  let negCross = 0;
  for (const n of neg) for (const p of para) if (n.cosine > p.cosine) negCross++;
  const negCrossTotal = neg.length * para.length;

  console.log(`embedder: ${embedder.id} (${embedder.dimensions} dims)   pairs: ${path.relative(root, args.pairs)}`);
  console.log('\ncosine similarity per group');
  const rows: Array<[string, Summary]> = [
    ['paraphrase (same fact, reworded)', groups.paraphrase],
    ['negation (X / not X)', groups.negation],
    ['different entity (same sentence, other id)', groups.differentEntity],
    ['same entity reworded (a vs aReworded)', groups.sameEntityReworded],
  ];
  const w = Math.max(...rows.map(([n]) => n.length));
  console.log(`${'group'.padEnd(w)}   n    min    p25    median p75    max`);
  for (const [name, s] of rows) {
    console.log(
      `${name.padEnd(w)}  ${String(s.n).padStart(2)}  ${[s.min, s.p25, s.median, s.p75, s.max].map(f3).join('  ')}`,
    );
  }

  console.log('\nparaphrase vs negation');
  console.log(`  median gap (median paraphrase − median negation): ${f3(medianGap)}`);
  console.log(`  negation pairs scoring above the median paraphrase: ${pct(negAboveParaMedian, neg.length)}`);
  console.log(
    `  all (negation pair, paraphrase pair) combinations where the negation scores higher: ${pct(negCross, negCrossTotal)}`,
  );

  console.log('\ndifferent entity vs same fact reworded');
  console.log(
    '  matched: for each differentEntity record, is cos(a, b) > cos(a, aReworded)? i.e. the same sentence about',
  );
  console.log(`  another entity sits nearer to a than a's own fact in other words: ${pct(matchedNearer, ent.length)}`);
  console.log('  cross-group: over all (differentEntity pair i, paraphrase pair j), is cos(a_i, b_i) > cos(a_j, b_j)?');
  console.log(`  ${pct(crossNearer, crossTotal)}`);

  fs.mkdirSync(path.dirname(args.out), { recursive: true });
  fs.writeFileSync(
    args.out,
    `${JSON.stringify(
      {
        embedder: embedder.id,
        dimensions: embedder.dimensions,
        pairsFile: path.relative(root, args.pairs),
        at: new Date().toISOString(),
        quantiles: 'linear interpolation between closest ranks',
        groups,
        paraphraseVsNegation: {
          medianGap,
          negationAboveParaphraseMedian: {
            count: negAboveParaMedian,
            of: neg.length,
            fraction: negAboveParaMedian / neg.length,
          },
          negationAboveParaphraseAllPairs: { count: negCross, of: negCrossTotal, fraction: negCross / negCrossTotal },
        },
        differentEntityVsReworded: {
          matched: {
            definition: 'fraction of differentEntity records with cos(a, b) > cos(a, aReworded)',
            count: matchedNearer,
            of: ent.length,
            fraction: matchedNearer / ent.length,
          },
          crossGroup: {
            definition: 'fraction of (differentEntity i, paraphrase j) combinations with cos(a_i, b_i) > cos(a_j, b_j)',
            count: crossNearer,
            of: crossTotal,
            fraction: crossNearer / crossTotal,
          },
        },
        pairs: { paraphrase: para, negation: neg, differentEntity: ent },
      },
      null,
      2,
    )}\n`,
  );
  console.log(`\nwrote ${path.relative(process.cwd(), args.out) || args.out}`);
}

main().catch((e: unknown) => fail(3, `identity_eval: ${(e as Error)?.stack ?? String(e)}`));
