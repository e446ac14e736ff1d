import { describe, expect, it } from 'vitest';
import { mayRead } from '../../src/agent/access';
import { SCOPES } from '../../src/agent/scopes';
import { beliefReads } from '../../src/client';

describe('the client reads back what the server lets a token read', () => {
  it("for every set of scopes, beliefReads answers as the server's Belief and RetractedBelief rules do", () => {
    for (let mask = 0; mask < 2 ** SCOPES.length; mask++) {
      const scopes = SCOPES.filter((_, i) => mask & (2 ** i));
      const viewer = { id: '1', scopes };
      expect(beliefReads(scopes), scopes.join(',') || '(none)').toEqual({
        readsBeliefs: mayRead(viewer, 'Belief'),
        readsRetracted: mayRead(viewer, 'RetractedBelief'),
      });
    }
  });
});
