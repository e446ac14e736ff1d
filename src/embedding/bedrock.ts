/**
 * Amazon Titan Text Embeddings V2 on Amazon Bedrock (InvokeModel), at 512 dimensions.
 */
import { InvokeModelCommand, type BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';
import { EMBEDDING_DIMENSIONS, EmbedderError, type Embedder } from './embedder';
import {
  BedrockCallError,
  callWithRetry,
  createBedrockRuntimeClient,
  retryPolicy,
  type BedrockConnectionOptions,
  type RetryPolicy,
} from './bedrock-transport';

const TITAN_EMBED_V2_MODEL_ID = 'amazon.titan-embed-text-v2:0';

/** Options for {@link BedrockTitanEmbedder}. Every field is optional; defaults suit production. */
export interface BedrockTitanEmbedderOptions extends BedrockConnectionOptions, Partial<RetryPolicy> {
  /** Maximum concurrent InvokeModel calls per `embed()` (Titan embeds one text per call). Default 4. */
  concurrency?: number;
}

const DEFAULTS = { timeoutMs: 10_000, maxAttempts: 4, baseDelayMs: 200, maxDelayMs: 5_000, concurrency: 4 } as const;

/**
 * Embedder backed by `amazon.titan-embed-text-v2:0` (id `bedrock:amazon.titan-embed-text-v2:0`).
 *
 * Guarantees: each text is sent as `{inputText, dimensions: 512, normalize: true}`; at most `concurrency`
 * calls are in flight; each call has a hard `timeoutMs` and is retried (bounded, jittered exponential
 * backoff) on throttling, 5xx, timeouts and network errors only; every response is validated (exactly 512
 * finite numbers, non-zero norm) and re-normalised. Anything else rejects the whole batch with an
 * {@link EmbedderError} naming the model and the cause. There is no fallback to another embedder, and an
 * empty string is rejected up front (the model cannot embed it).
 */
export class BedrockTitanEmbedder implements Embedder {
  readonly modelId = TITAN_EMBED_V2_MODEL_ID;
  readonly id = `bedrock:${TITAN_EMBED_V2_MODEL_ID}`;
  readonly dimensions = EMBEDDING_DIMENSIONS;
  private readonly client: BedrockRuntimeClient;
  private readonly ownsClient: boolean;
  private readonly policy: RetryPolicy;
  private readonly concurrency: number;

  constructor(options: BedrockTitanEmbedderOptions = {}) {
    this.client = createBedrockRuntimeClient(options);
    this.ownsClient = !options.client;
    this.policy = retryPolicy(options, DEFAULTS);
    this.concurrency = Math.max(1, Math.floor(options.concurrency ?? DEFAULTS.concurrency));
  }

  async embed(texts: string[]): Promise<number[][]> {
    if (!Array.isArray(texts)) throw new EmbedderError(this.id, 'embed() expects an array of strings');
    texts.forEach((t, i) => {
      if (typeof t !== 'string') throw new EmbedderError(this.id, `input #${i} is ${typeof t}, expected a string`);
      if (t.length === 0)
        throw new EmbedderError(this.id, `input #${i} is empty; ${this.modelId} cannot embed an empty text`);
    });

    const out = new Array<number[]>(texts.length);
    const batch = new AbortController(); // first failure stops the rest of the batch
    let next = 0;
    let failure: unknown;
    const worker = async () => {
      while (failure === undefined) {
        const i = next++;
        if (i >= texts.length) return;
        try {
          out[i] = await this.embedOne(texts[i]!, i, batch.signal);
        } catch (e) {
          if (failure === undefined) failure = e;
          batch.abort(e);
          return;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, texts.length) }, worker));
    if (failure !== undefined) throw failure;
    return out;
  }

  /** Closes the client's connections (only when this embedder created the client). */
  destroy(): void {
    if (this.ownsClient) this.client.destroy();
  }

  private async embedOne(text: string, index: number, signal: AbortSignal): Promise<number[]> {
    const body = JSON.stringify({ inputText: text, dimensions: this.dimensions, normalize: true });
    let raw: Uint8Array;
    try {
      const res = await callWithRetry(
        `InvokeModel ${this.modelId}`,
        (attemptSignal) =>
          this.client.send(
            new InvokeModelCommand({
              modelId: this.modelId,
              contentType: 'application/json',
              accept: 'application/json',
              body,
            }),
            { abortSignal: attemptSignal },
          ),
        this.policy,
        signal,
      );
      raw = res.body;
    } catch (e) {
      const msg = e instanceof BedrockCallError ? e.message : String(e);
      throw new EmbedderError(this.id, `input #${index}: ${msg}`, { cause: e });
    }
    return this.parse(raw, index);
  }

  private parse(raw: Uint8Array | undefined, index: number): number[] {
    const fail = (why: string) =>
      new EmbedderError(this.id, `input #${index}: invalid response from ${this.modelId}: ${why}`);
    let doc: unknown;
    try {
      doc = JSON.parse(new TextDecoder().decode(raw ?? new Uint8Array()));
    } catch (e) {
      throw fail(`body is not JSON (${(e as Error).message})`);
    }
    const embedding = (doc as { embedding?: unknown } | null)?.embedding;
    if (!Array.isArray(embedding)) throw fail('no "embedding" array');
    if (embedding.length !== this.dimensions) {
      throw fail(`embedding has ${embedding.length} dimensions, expected ${this.dimensions}`);
    }
    let sum = 0;
    for (const x of embedding) {
      if (typeof x !== 'number' || !Number.isFinite(x))
        throw fail('embedding contains a non-finite or non-numeric value');
      sum += x * x;
    }
    if (sum === 0) throw fail('embedding is the zero vector');
    const norm = Math.sqrt(sum);
    return (embedding as number[]).map((x) => x / norm);
  }
}
