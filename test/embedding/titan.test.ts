import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BedrockTitanEmbedder, type BedrockTitanEmbedderOptions } from '../../src/embedding/bedrock';
import { EmbedderError } from '../../src/embedding/embedder';
import { LocalEmbedder } from '../../src/embedding/local';
import { startFakeBedrock, type FakeBedrock } from '../support/fake-bedrock';

const CREDS = { accessKeyId: 'AKIDFAKEFAKEFAKE', secretAccessKey: 'fake-secret' };

let fake: FakeBedrock;
const made: BedrockTitanEmbedder[] = [];

function embedder(o: BedrockTitanEmbedderOptions = {}): BedrockTitanEmbedder {
  const e = new BedrockTitanEmbedder({
    endpoint: fake.url,
    region: 'us-east-1',
    credentials: CREDS,
    timeoutMs: 300,
    maxAttempts: 3,
    baseDelayMs: 5,
    maxDelayMs: 20,
    ...o,
  });
  made.push(e);
  return e;
}

const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

beforeAll(async () => {
  fake = await startFakeBedrock();
});
afterEach(() => {
  fake.reset();
  for (const e of made.splice(0)) e.destroy();
});
afterAll(async () => {
  await fake.close();
});

describe('BedrockTitanEmbedder against the fake Bedrock Runtime (real SDK client)', () => {
  it('embeds: 512 finite dims, unit norm, the wire request is InvokeModel with dimensions 512 and normalize true', async () => {
    const e = embedder();
    expect(e.id).toBe('bedrock:amazon.titan-embed-text-v2:0');
    expect(e.dimensions).toBe(512);
    const [v] = await e.embed(['customer 4411 passport is authentic']);
    expect(v).toHaveLength(512);
    expect(v!.every(Number.isFinite)).toBe(true);
    expect(norm(v!)).toBeCloseTo(1, 9);
    // the fake is deterministic from the text (LocalEmbedder at 512)
    expect(v!).toEqual(
      new LocalEmbedder().embedOne('customer 4411 passport is authentic').map((x) => expect.closeTo(x, 12)),
    );

    expect(fake.calls).toHaveLength(1);
    const call = fake.calls[0]!;
    expect(call.method).toBe('POST');
    expect(call.operation).toBe('invoke');
    expect(call.modelId).toBe('amazon.titan-embed-text-v2:0');
    expect(call.body).toEqual({ inputText: 'customer 4411 passport is authentic', dimensions: 512, normalize: true });
    expect(call.headers['content-type']).toBe('application/json');
    expect(call.httpVersion).toBe('2.0'); // the client's default handler speaks HTTP/2
    expect(call.sigv4).toBe(true);
    expect(call.authorization).toContain('Credential=AKIDFAKEFAKEFAKE/');
    expect(call.authorization).toContain('/us-east-1/bedrock/aws4_request');
  });

  it('keeps input order over concurrent per-text calls and never exceeds the concurrency limit', async () => {
    let inFlight = 0;
    let peak = 0;
    fake.setDefault(() => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      setTimeout(() => inFlight--, 30);
      return { kind: 'delay', ms: 30 };
    });
    const texts = Array.from({ length: 9 }, (_, i) => `text number ${i}`);
    const vs = await embedder({ concurrency: 3 }).embed(texts);
    const local = new LocalEmbedder();
    vs.forEach((v, i) => expect(v[0]).toBeCloseTo(local.embedOne(texts[i]!)[0]!, 12));
    expect(fake.calls).toHaveLength(9);
    expect(peak).toBeLessThanOrEqual(3);
    expect(peak).toBeGreaterThan(1);
  });

  it('embed([]) makes no call', async () => {
    expect(await embedder().embed([])).toEqual([]);
    expect(fake.calls).toHaveLength(0);
  });

  it('retries a 429 ThrottlingException, then succeeds', async () => {
    fake.script({ kind: 'throttle' });
    const [v] = await embedder().embed(['hello']);
    expect(v).toHaveLength(512);
    expect(fake.calls.map((c) => c.behaviour)).toEqual(['throttle', 'ok']);
  });

  it('retries 500 and 503, then succeeds', async () => {
    fake.script({ kind: 'error', status: 500 }, { kind: 'error', status: 503 });
    const [v] = await embedder().embed(['hello']);
    expect(norm(v!)).toBeCloseTo(1, 9);
    expect(fake.calls.map((c) => c.behaviour)).toEqual(['error', 'error', 'ok']);
  });

  it('abandons a stalled attempt after timeoutMs and retries', async () => {
    fake.script({ kind: 'stall' });
    const t0 = Date.now();
    const [v] = await embedder({ timeoutMs: 150 }).embed(['hello']);
    expect(v).toHaveLength(512);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    expect(fake.calls).toHaveLength(2);
  });

  it('a slow answer past the timeout counts as a timeout too', async () => {
    fake.script({ kind: 'delay', ms: 400 });
    await embedder({ timeoutMs: 100 }).embed(['hello']);
    expect(fake.calls.map((c) => c.behaviour)).toEqual(['delay', 'ok']);
  });

  it('persistent 429 → EmbedderError naming the model, the attempts and the cause; bounded', async () => {
    fake.setDefault({ kind: 'throttle' });
    const err = await embedder({ maxAttempts: 3 })
      .embed(['hello'])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbedderError);
    const msg = (err as Error).message;
    expect(msg).toContain('amazon.titan-embed-text-v2:0');
    expect(msg).toContain('after 3 attempts');
    expect(msg).toContain('ThrottlingException');
    expect(fake.calls).toHaveLength(3);
  });

  it('persistent timeouts → EmbedderError saying it timed out', async () => {
    fake.setDefault({ kind: 'stall' });
    const err = await embedder({ timeoutMs: 60, maxAttempts: 2 })
      .embed(['hello'])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbedderError);
    expect((err as Error).message).toMatch(/timed out/);
    expect(fake.calls).toHaveLength(2);
  });

  it('does not retry a 400 ValidationException', async () => {
    fake.script({ kind: 'error', status: 400, message: 'Malformed input request' });
    const err = await embedder()
      .embed(['hello'])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbedderError);
    expect((err as Error).message).toContain('ValidationException');
    expect((err as Error).message).toContain('not retryable');
    expect(fake.calls).toHaveLength(1);
  });

  it('malformed JSON body → EmbedderError (no retry)', async () => {
    fake.script({ kind: 'malformed' });
    const err = await embedder()
      .embed(['hello'])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbedderError);
    expect((err as Error).message).toMatch(/not JSON/);
    expect(fake.calls).toHaveLength(1);
  });

  it('wrong number of dimensions → EmbedderError', async () => {
    fake.script({ kind: 'wrongDims', dims: 1024 });
    const err = await embedder()
      .embed(['hello'])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbedderError);
    expect((err as Error).message).toContain('1024 dimensions, expected 512');
  });

  it('non-finite or non-numeric entries, missing embedding, zero vector → EmbedderError', async () => {
    const bad = Array.from({ length: 512 }, () => 0.01) as unknown[];
    bad[7] = 'x';
    fake.script(
      { kind: 'embedding', vector: bad },
      { kind: 'raw', status: 200, body: '{"vectors":[]}' },
      { kind: 'embedding', vector: new Array(512).fill(0) },
    );
    const e = embedder();
    await expect(e.embed(['a'])).rejects.toThrow(/non-finite or non-numeric/);
    await expect(e.embed(['a'])).rejects.toThrow(/no "embedding" array/);
    await expect(e.embed(['a'])).rejects.toThrow(/zero vector/);
  });

  it('re-normalises a slightly off-norm vector from the service', async () => {
    fake.script({ kind: 'embedding', vector: Array.from({ length: 512 }, (_, i) => (i % 2 ? 0.05 : -0.04)) });
    const [v] = await embedder().embed(['a']);
    expect(norm(v!)).toBeCloseTo(1, 12);
  });

  it('one failing text fails the whole batch with EmbedderError naming its index', async () => {
    fake.setDefault((call) =>
      (call.body as { inputText: string }).inputText === 'bad' ? { kind: 'wrongDims', dims: 3 } : { kind: 'ok' },
    );
    const err = await embedder({ concurrency: 1 })
      .embed(['good', 'bad', 'later'])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EmbedderError);
    expect((err as Error).message).toContain('input #1');
    expect(fake.calls.map((c) => (c.body as { inputText: string }).inputText)).toEqual(['good', 'bad']);
  });

  it('rejects an empty text before calling the service', async () => {
    await expect(embedder().embed(['ok', ''])).rejects.toThrow(/input #1 is empty/);
    expect(fake.calls).toHaveLength(0);
  });

  it('reads RETRACT_BEDROCK_ENDPOINT when no endpoint option is given', async () => {
    const e = new BedrockTitanEmbedder({
      env: { RETRACT_BEDROCK_ENDPOINT: fake.url },
      region: 'us-east-1',
      credentials: CREDS,
      timeoutMs: 300,
    });
    made.push(e);
    await e.embed(['via env']);
    expect(fake.calls).toHaveLength(1);
  });
});
