import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AdjudicationCase } from '../../src/adjudication/adjudicator';
import {
  ADJUDICATOR_SYSTEM_PROMPT,
  BedrockClaudeAdjudicator,
  DEFAULT_CLAUDE_MODEL_ID,
  type BedrockClaudeAdjudicatorOptions,
} from '../../src/adjudication/bedrock';
import { startFakeBedrock, type FakeBedrock } from '../support/fake-bedrock';

const CREDS = { accessKeyId: 'AKIDFAKEFAKEFAKE', secretAccessKey: 'fake-secret' };

const CASE: AdjudicationCase = {
  claimKey: 'customer:4411/passport.authentic',
  existing: {
    statement: "Customer 4411's passport is authentic",
    value: true,
    evidence: 'agent looked at the photo',
    author: 'agent:a',
  },
  proposed: {
    statement: "Customer 4411's passport is not authentic",
    value: false,
    evidence: 'issuing-authority registry: reported stolen',
    author: 'agent:b',
    at: '2025-03-02T09:00:00Z',
  },
};

let fake: FakeBedrock;
const made: BedrockClaudeAdjudicator[] = [];

function adjudicator(o: BedrockClaudeAdjudicatorOptions = {}): BedrockClaudeAdjudicator {
  const a = new BedrockClaudeAdjudicator({
    endpoint: fake.url,
    region: 'us-east-1',
    credentials: CREDS,
    env: {},
    timeoutMs: 300,
    maxAttempts: 3,
    baseDelayMs: 5,
    maxDelayMs: 20,
    ...o,
  });
  made.push(a);
  return a;
}

beforeAll(async () => {
  fake = await startFakeBedrock();
});
afterEach(() => {
  fake.reset();
  for (const a of made.splice(0)) a.destroy();
});
afterAll(async () => {
  await fake.close();
});

describe('BedrockClaudeAdjudicator against the fake Bedrock Runtime (real SDK client)', () => {
  it('returns the model verdict; sends Converse with the system prompt, temperature 0 and the case', async () => {
    fake.script({
      kind: 'converse',
      text: '{"verdict": "ACCEPT_PROPOSED", "rationale": "registry beats a visual check"}',
    });
    const a = adjudicator();
    expect(a.id).toBe(`bedrock:${DEFAULT_CLAUDE_MODEL_ID}`);
    expect(DEFAULT_CLAUDE_MODEL_ID).toBe('us.anthropic.claude-sonnet-4-5-20250929-v1:0');
    const r = await a.adjudicate(CASE);
    expect(r).toEqual({ verdict: 'ACCEPT_PROPOSED', rationale: 'registry beats a visual check' });

    expect(fake.calls).toHaveLength(1);
    const call = fake.calls[0]!;
    expect(call.operation).toBe('converse');
    expect(call.modelId).toBe(DEFAULT_CLAUDE_MODEL_ID);
    expect(call.sigv4).toBe(true);
    const body = call.body as {
      system: Array<{ text: string }>;
      messages: Array<{ role: string; content: Array<{ text: string }> }>;
      inferenceConfig: { temperature: number; maxTokens: number };
    };
    expect(body.system).toEqual([{ text: ADJUDICATOR_SYSTEM_PROMPT }]);
    expect(body.inferenceConfig.temperature).toBe(0);
    expect(body.inferenceConfig.maxTokens).toBeGreaterThan(0);
    expect(body.messages).toHaveLength(1);
    expect(body.messages[0]!.role).toBe('user');
    expect(body.messages[0]!.content[0]!.text).toContain('"claimKey": "customer:4411/passport.authentic"');
  });

  it('model id comes from the option, else RETRACT_BEDROCK_MODEL_ID', async () => {
    const viaEnv = adjudicator({ env: { RETRACT_BEDROCK_MODEL_ID: 'anthropic.claude-test-v1:0' } });
    expect(viaEnv.id).toBe('bedrock:anthropic.claude-test-v1:0');
    await viaEnv.adjudicate(CASE);
    expect(fake.calls[0]!.modelId).toBe('anthropic.claude-test-v1:0');
    expect(adjudicator({ modelId: 'x.y', env: { RETRACT_BEDROCK_MODEL_ID: 'ignored' } }).id).toBe('bedrock:x.y');
  });

  it('accepts JSON inside a ```json fence', async () => {
    fake.script({
      kind: 'converse',
      text: '```json\n{"verdict":"KEEP_EXISTING","rationale":"existing is documented"}\n```',
    });
    expect(await adjudicator().adjudicate(CASE)).toEqual({
      verdict: 'KEEP_EXISTING',
      rationale: 'existing is documented',
    });
  });

  it.each([
    ['prose around the JSON', 'Sure! {"verdict":"KEEP_EXISTING","rationale":"x"}'],
    ['prose after a fence', '```json\n{"verdict":"KEEP_EXISTING","rationale":"x"}\n```\nHope that helps'],
    ['not JSON', 'I think we should keep the existing belief.'],
    ['truncated JSON', '{"verdict":"KEEP_EXISTING","rationale":"x"'],
    ['extra keys', '{"verdict":"KEEP_EXISTING","rationale":"x","confidence":0.9}'],
    ['empty rationale', '{"verdict":"KEEP_EXISTING","rationale":"  "}'],
    ['a refusal', "I'm sorry, but I can't help with that request."],
  ])('malformed reply (%s) → ESCALATE with the reason', async (_label, text) => {
    fake.script({ kind: 'converse', text });
    const r = await adjudicator().adjudicate(CASE);
    expect(r.verdict).toBe('ESCALATE');
    expect(r.rationale).toMatch(/model reply rejected/);
    expect(fake.calls).toHaveLength(1); // a bad reply is not retried
  });

  it('unknown verdict → ESCALATE naming it', async () => {
    fake.script({ kind: 'converse', text: '{"verdict":"MERGE","rationale":"both"}' });
    const r = await adjudicator().adjudicate(CASE);
    expect(r.verdict).toBe('ESCALATE');
    expect(r.rationale).toContain('unknown verdict "MERGE"');
  });

  it.each(['content_filtered', 'guardrail_intervened', 'max_tokens', 'tool_use'])(
    'stopReason %s → ESCALATE even when the text parses',
    async (stopReason) => {
      fake.script({ kind: 'converse', text: '{"verdict":"ACCEPT_PROPOSED","rationale":"x"}', stopReason });
      const r = await adjudicator().adjudicate(CASE);
      expect(r.verdict).toBe('ESCALATE');
      expect(r.rationale).toContain(`stopReason ${stopReason}`);
    },
  );

  it('timeout then success → the verdict from the retry', async () => {
    fake.script({ kind: 'stall' }, { kind: 'converse', text: '{"verdict":"KEEP_EXISTING","rationale":"second try"}' });
    const r = await adjudicator({ timeoutMs: 120 }).adjudicate(CASE);
    expect(r).toEqual({ verdict: 'KEEP_EXISTING', rationale: 'second try' });
    expect(fake.calls).toHaveLength(2);
  });

  it('persistent timeout → ESCALATE saying it timed out, after maxAttempts', async () => {
    fake.setDefault({ kind: 'stall' });
    const t0 = Date.now();
    const r = await adjudicator({ timeoutMs: 80, maxAttempts: 2 }).adjudicate(CASE);
    expect(r.verdict).toBe('ESCALATE');
    expect(r.rationale).toMatch(/timed out/);
    expect(fake.calls).toHaveLength(2);
    expect(Date.now() - t0).toBeLessThan(2_000);
  });

  it('429 then success is retried', async () => {
    fake.script({ kind: 'throttle' }, { kind: 'converse', text: '{"verdict":"ESCALATE","rationale":"balanced"}' });
    expect(await adjudicator().adjudicate(CASE)).toEqual({ verdict: 'ESCALATE', rationale: 'balanced' });
    expect(fake.calls.map((c) => c.behaviour)).toEqual(['throttle', 'converse']);
  });

  it('persistent 500s → ESCALATE after the retries, naming the cause', async () => {
    fake.setDefault({ kind: 'error', status: 500 });
    const r = await adjudicator({ maxAttempts: 3 }).adjudicate(CASE);
    expect(r.verdict).toBe('ESCALATE');
    expect(r.rationale).toContain('after 3 attempts');
    expect(r.rationale).toContain('InternalServerException');
    expect(fake.calls).toHaveLength(3);
  });

  it('persistent throttling → ESCALATE', async () => {
    fake.setDefault({ kind: 'throttle' });
    const r = await adjudicator({ maxAttempts: 2 }).adjudicate(CASE);
    expect(r.verdict).toBe('ESCALATE');
    expect(r.rationale).toContain('throttled');
    expect(fake.calls).toHaveLength(2);
  });

  it('a 403 AccessDenied is not retried → ESCALATE', async () => {
    fake.script({ kind: 'error', status: 403, message: 'no model access' });
    const r = await adjudicator().adjudicate(CASE);
    expect(r.verdict).toBe('ESCALATE');
    expect(r.rationale).toContain('AccessDeniedException');
    expect(fake.calls).toHaveLength(1);
  });

  it('a malformed Converse response body → ESCALATE', async () => {
    fake.script({ kind: 'malformed', body: '{"output": {"message": ' });
    const r = await adjudicator().adjudicate(CASE);
    expect(r.verdict).toBe('ESCALATE');
    expect(fake.calls).toHaveLength(1);
  });

  it("the caller's abort signal → ESCALATE promptly, without further attempts", async () => {
    fake.setDefault({ kind: 'stall' });
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(new Error('shutting down')), 50);
    const t0 = Date.now();
    const r = await adjudicator({ timeoutMs: 5_000 }).adjudicate(CASE, { signal: ctl.signal });
    expect(r.verdict).toBe('ESCALATE');
    expect(r.rationale).toContain('aborted by caller');
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(fake.calls).toHaveLength(1);
  });

  it('an unserialisable case → ESCALATE, never a throw', async () => {
    const bad = { ...CASE, proposed: { ...CASE.proposed, value: 10n } };
    const r = await adjudicator().adjudicate(bad);
    expect(r.verdict).toBe('ESCALATE');
    expect(fake.calls).toHaveLength(0);
  });
});
