import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeBedrock, type FakeBedrock } from './fake-bedrock';

let fake: FakeBedrock;
beforeAll(async () => {
  fake = await startFakeBedrock();
});
afterAll(async () => {
  await fake.close();
});

describe('fake Bedrock Runtime over HTTP/1.1', () => {
  it('answers Titan invoke, requires an Authorization header, records calls, and follows the script', async () => {
    const url = `${fake.url}/model/${encodeURIComponent('amazon.titan-embed-text-v2:0')}/invoke`;
    const post = (body: string, auth = true) =>
      fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(auth ? { authorization: 'AWS4-HMAC-SHA256 Credential=x' } : {}),
        },
        body,
      });

    const ok = await post(JSON.stringify({ inputText: 'hello', dimensions: 512, normalize: true }));
    expect(ok.status).toBe(200);
    const doc = (await ok.json()) as { embedding: number[]; inputTextTokenCount: number };
    expect(doc.embedding).toHaveLength(512);
    expect(doc.inputTextTokenCount).toBe(1);

    const noAuth = await post('{}', false);
    expect(noAuth.status).toBe(403);
    expect(noAuth.headers.get('x-amzn-errortype')).toMatch(/^MissingAuthenticationTokenException/);

    fake.script({ kind: 'throttle' });
    const throttled = await post(JSON.stringify({ inputText: 'x' }));
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('x-amzn-errortype')).toMatch(/^ThrottlingException/);
    expect(await throttled.json()).toHaveProperty('message');

    const bad = await post(JSON.stringify({ inputText: 'x', dimensions: 7 }));
    expect(bad.status).toBe(400);

    expect(fake.calls.map((c) => [c.httpVersion, c.modelId, c.sigv4])).toEqual([
      ['1.1', 'amazon.titan-embed-text-v2:0', true],
      ['1.1', 'amazon.titan-embed-text-v2:0', false],
      ['1.1', 'amazon.titan-embed-text-v2:0', true],
      ['1.1', 'amazon.titan-embed-text-v2:0', true],
    ]);
    expect(fake.calls[0]!.authorization).toBe('AWS4-HMAC-SHA256 Credential=x');
  });

  it('closes with a stalled request still open', async () => {
    const other = await startFakeBedrock();
    other.setDefault({ kind: 'stall' });
    const pending = fetch(`${other.url}/model/m/converse`, {
      method: 'POST',
      headers: { authorization: 'Bearer t' },
      body: '{"messages":[]}',
    }).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 50));
    expect(other.calls).toHaveLength(1);
    await other.close();
    expect(await pending).toBeInstanceOf(Error);
  });
});
