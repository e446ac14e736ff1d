import { describe, expect, it } from 'vitest';
import { createAdjudicator } from '../../src/adjudication';
import { BedrockClaudeAdjudicator } from '../../src/adjudication/bedrock';
import { HeuristicAdjudicator } from '../../src/adjudication/heuristic';
import { createEmbedder } from '../../src/embedding';
import { ConfigError } from '../../src/kernel/config-error';
import { BedrockTitanEmbedder } from '../../src/embedding/bedrock';
import { backoffDelay, classifyFailure, describeError } from '../../src/embedding/bedrock-transport';
import { LocalEmbedder } from '../../src/embedding/local';

describe('createEmbedder', () => {
  it('defaults to local, picks bedrock, rejects anything else naming the variable and values', async () => {
    expect(await createEmbedder({})).toBeInstanceOf(LocalEmbedder);
    expect(await createEmbedder({ RETRACT_EMBEDDER: ' local ' })).toBeInstanceOf(LocalEmbedder);
    const b = await createEmbedder({ RETRACT_EMBEDDER: 'bedrock', AWS_REGION: 'us-east-1' });
    expect(b).toBeInstanceOf(BedrockTitanEmbedder);
    expect(b.id).toBe('bedrock:amazon.titan-embed-text-v2:0');
    (b as BedrockTitanEmbedder).destroy();
    expect(() => createEmbedder({ RETRACT_EMBEDDER: 'remote' })).toThrow(ConfigError);
    expect(() => createEmbedder({ RETRACT_EMBEDDER: 'Bedrock' })).toThrow(
      /RETRACT_EMBEDDER must be one of local, bedrock \(got "Bedrock"\)/,
    );
  });
});

describe('createAdjudicator', () => {
  it('defaults to heuristic, picks bedrock, rejects anything else', async () => {
    expect(await createAdjudicator({})).toBeInstanceOf(HeuristicAdjudicator);
    const b = await createAdjudicator({
      RETRACT_ADJUDICATOR: 'bedrock',
      RETRACT_BEDROCK_MODEL_ID: 'm.x',
      AWS_REGION: 'us-east-1',
    });
    expect(b).toBeInstanceOf(BedrockClaudeAdjudicator);
    expect(b.id).toBe('bedrock:m.x');
    (b as BedrockClaudeAdjudicator).destroy();
    expect(() => createAdjudicator({ RETRACT_ADJUDICATOR: 'llm' })).toThrow(
      /RETRACT_ADJUDICATOR must be one of heuristic, bedrock \(got "llm"\)/,
    );
  });
});

describe('bedrock transport', () => {
  it('classifies failures', () => {
    expect(classifyFailure({ name: 'ThrottlingException', $metadata: { httpStatusCode: 429 } })).toBe('throttled');
    expect(classifyFailure({ name: 'Unknown', $metadata: { httpStatusCode: 503 } })).toBe('server');
    expect(classifyFailure({ name: 'ModelTimeoutException', $metadata: { httpStatusCode: 408 } })).toBe('timeout');
    expect(classifyFailure({ code: 'ECONNRESET' })).toBe('network');
    expect(classifyFailure({ name: 'ValidationException', $metadata: { httpStatusCode: 400 } })).toBe('client');
    expect(classifyFailure({ name: 'AccessDeniedException', $metadata: { httpStatusCode: 403 } })).toBe('client');
    expect(classifyFailure({ name: 'SyntaxError', $metadata: { httpStatusCode: 200 } })).toBe('malformed');
    expect(classifyFailure(new Error('Region is missing'))).toBe('client');
  });

  it('describes errors on one line', () => {
    expect(
      describeError({ name: 'ThrottlingException', message: 'slow down\nmore', $metadata: { httpStatusCode: 429 } }),
    ).toBe('ThrottlingException (HTTP 429): slow down');
  });

  it('backs off exponentially with equal jitter, capped', () => {
    for (let i = 0; i < 50; i++) {
      const d1 = backoffDelay(1, { baseDelayMs: 100, maxDelayMs: 1000 });
      const d3 = backoffDelay(3, { baseDelayMs: 100, maxDelayMs: 1000 });
      const d9 = backoffDelay(9, { baseDelayMs: 100, maxDelayMs: 1000 });
      expect(d1).toBeGreaterThanOrEqual(50);
      expect(d1).toBeLessThanOrEqual(100);
      expect(d3).toBeGreaterThanOrEqual(200);
      expect(d3).toBeLessThanOrEqual(400);
      expect(d9).toBeGreaterThanOrEqual(500);
      expect(d9).toBeLessThanOrEqual(1000);
    }
  });
});
