import { describe, expect, it } from 'vitest';
import { bindEmbedder, EmbedderMismatchError } from '../../src/store/meta';
import { embedder, engines, type TestDb } from '../support/engines';
import type { Embedder } from '../../src/embedding/embedder';
import { storeSuite } from '../support/helpers';

describe.each(engines())('the store keeps to one embedder on %s', (engine) => {
  let t: TestDb;
  storeSuite(engine, {}, (s) => (t = s.t));

  it('records the first embedder and dimension, accepts it again, and refuses another', async () => {
    await bindEmbedder(t.store, embedder);
    await bindEmbedder(t.store, embedder);
    const other: Embedder = { id: 'bedrock:amazon.titan-embed-text-v2:0', dimensions: 512, embed: async () => [] };
    await expect(bindEmbedder(t.store, other)).rejects.toBeInstanceOf(EmbedderMismatchError);
    await expect(bindEmbedder(t.store, other)).rejects.toThrow(
      /local:hashed-ngrams-v1@512.*bedrock:amazon.titan-embed-text-v2:0@512/,
    );
    const otherDims: Embedder = { ...embedder, id: embedder.id, dimensions: 256, embed: embedder.embed.bind(embedder) };
    await expect(bindEmbedder(t.store, otherDims)).rejects.toBeInstanceOf(EmbedderMismatchError);
  });
});
