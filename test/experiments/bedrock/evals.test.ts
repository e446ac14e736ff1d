/**
 * The two experiment scripts, run as child processes against the fake Bedrock Runtime through the
 * environment alone (RETRACT_BEDROCK_ENDPOINT + AWS_* variables), exactly as an operator would run them.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeBedrock, type FakeBedrock } from '../../support/fake-bedrock';

const root = path.resolve(import.meta.dirname, '../../..');
const tsx = path.join(root, 'node_modules/.bin/tsx');
const casesFile = path.join(root, 'experiments/data/adjudicator_cases.json');

let tmp: string;
const fakes: FakeBedrock[] = [];
/** Each test has its own fake so the tests can run concurrently. */
async function newFake(): Promise<FakeBedrock> {
  const f = await startFakeBedrock();
  fakes.push(f);
  return f;
}

/** An environment with no way to find real AWS credentials. */
function isolatedEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const k of ['PATH', 'HOME', 'TMPDIR', 'SystemRoot']) if (process.env[k]) env[k] = process.env[k];
  return {
    ...env,
    AWS_SHARED_CREDENTIALS_FILE: path.join(tmp, 'no-credentials'),
    AWS_CONFIG_FILE: path.join(tmp, 'no-config'),
    AWS_EC2_METADATA_DISABLED: 'true',
    NODE_NO_WARNINGS: '1',
    ...extra,
  };
}
const fakeAws = (fake: FakeBedrock) => ({
  RETRACT_BEDROCK_ENDPOINT: fake.url,
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'AKIDFAKEFAKEFAKE',
  AWS_SECRET_ACCESS_KEY: 'fake-secret',
});

function run(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(tsx, [path.join(root, script), ...args], { cwd: root, env, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retract-evals-'));
});
afterAll(async () => {
  await Promise.all(fakes.map((f) => f.close()));
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe.concurrent('experiments against the fake Bedrock Runtime', () => {
  it('adjudicator_eval --adjudicator bedrock: a model that answers every label scores 100% and exits 0', async () => {
    const { cases } = JSON.parse(fs.readFileSync(casesFile, 'utf8')) as {
      cases: Array<{ case: { claimKey: string }; expected: string }>;
    };
    const byKey = new Map(cases.map((c) => [c.case.claimKey, c.expected]));
    expect(byKey.size).toBe(cases.length); // claim keys identify cases in this test
    const fake = await newFake();
    fake.setDefault((call) => {
      const text = (call.body as { messages: Array<{ content: Array<{ text: string }> }> }).messages[0]!.content[0]!
        .text;
      const key = /"claimKey": "([^"]+)"/.exec(text)?.[1] ?? '';
      return {
        kind: 'converse',
        text: JSON.stringify({ verdict: byKey.get(key) ?? 'ESCALATE', rationale: 'fake oracle' }),
      };
    });
    const out = path.join(tmp, 'adj.json');
    const r = await run(
      'experiments/adjudicator_eval.ts',
      ['--adjudicator', 'bedrock', '--out', out],
      isolatedEnv(fakeAws(fake)),
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`score: ${cases.length}/${cases.length} = 100.0%`);
    const doc = JSON.parse(fs.readFileSync(out, 'utf8')) as { adjudicator: string; passed: number };
    expect(doc.adjudicator).toBe('bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0');
    expect(doc.passed).toBe(cases.length);
    expect(fake.calls.filter((c) => c.operation === 'converse')).toHaveLength(cases.length);
  });

  it('adjudicator_eval exits 1 and lists misses when a case fails', async () => {
    const fake = await newFake(); // default reply: ESCALATE for everything
    const r = await run(
      'experiments/adjudicator_eval.ts',
      ['--adjudicator', 'bedrock', '--out', path.join(tmp, 'adj2.json')],
      isolatedEnv(fakeAws(fake)),
    );
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/misses \(\d+\):/);
    expect(r.stdout).toContain('adjudicator: fake default reply');
  });

  it('adjudicator_eval and identity_eval exit 2 with a plain message when bedrock has no credentials', async () => {
    const fake = await newFake();
    const env = isolatedEnv({ AWS_REGION: 'us-east-1', RETRACT_BEDROCK_ENDPOINT: fake.url });
    const [a, b] = await Promise.all([
      run('experiments/adjudicator_eval.ts', ['--out', path.join(tmp, 'x.json')], {
        ...env,
        RETRACT_ADJUDICATOR: 'bedrock',
      }),
      run('experiments/identity_eval.ts', ['--embedder', 'bedrock', '--out', path.join(tmp, 'y.json')], env),
    ]);
    expect(a.code).toBe(2);
    expect(a.stderr).toContain('no AWS credentials resolvable');
    expect(b.code).toBe(2);
    expect(b.stderr).toContain('no AWS credentials resolvable');
    expect(fake.calls).toHaveLength(0);
  });

  it('identity_eval --embedder bedrock embeds every text through InvokeModel and writes its report', async () => {
    const fake = await newFake();
    const out = path.join(tmp, 'id.json');
    const r = await run(
      'experiments/identity_eval.ts',
      ['--embedder', 'bedrock', '--out', out],
      isolatedEnv(fakeAws(fake)),
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('embedder: bedrock:amazon.titan-embed-text-v2:0 (512 dims)');
    const doc = JSON.parse(fs.readFileSync(out, 'utf8')) as { embedder: string; groups: Record<string, { n: number }> };
    expect(doc.embedder).toBe('bedrock:amazon.titan-embed-text-v2:0');
    expect(doc.groups.negation!.n).toBeGreaterThanOrEqual(20);
    expect(fake.calls.length).toBeGreaterThan(60);
    expect(
      fake.calls.every((c) => c.operation === 'invoke' && (c.body as { dimensions: number }).dimensions === 512),
    ).toBe(true);
  });
});
