// What an agent's own scopes let it read back, decided as the server decides it (src/agent/access.ts, which the
// client may not import; test/client/scopes.test.ts holds the two to the same answers): the client asks only for
// what its token may read, so a writer's committed answer is not lost to FORBIDDEN.

/** Whether `scopes` grant `scope`; admin implies every scope. */
export function grants(scopes: readonly string[], scope: string): boolean {
  return scopes.includes(scope) || scopes.includes('admin');
}

/** The @include variables of the documents that ask back beliefs the caller did not write. */
export interface BeliefReads {
  /** An ACTIVE belief: beliefs:read. */
  readsBeliefs: boolean;
  /** A RETRACTED belief (a fallen premise): beliefs:read or receipts:read. */
  readsRetracted: boolean;
}

export function beliefReads(scopes: readonly string[]): BeliefReads {
  const readsBeliefs = grants(scopes, 'beliefs:read');
  return { readsBeliefs, readsRetracted: readsBeliefs || grants(scopes, 'receipts:read') };
}
