// What an agent's own scopes let it read back, decided as the server decides it (src/agent/access.ts): the
// client asks only for what its token may read, so a writer's committed answer is not lost to FORBIDDEN.

/** Whether `scopes` grant `scope`; admin implies every scope. */
export function holds(scopes: readonly string[], scope: string): boolean {
  return scopes.includes(scope) || scopes.includes('admin');
}

/**
 * The @include variables of the documents that ask back beliefs the caller did not write: an ACTIVE belief
 * needs beliefs:read, a RETRACTED one (a fallen premise) beliefs:read or receipts:read.
 */
export function beliefReads(scopes: readonly string[]): { readsBeliefs: boolean; readsRetracted: boolean } {
  const readsBeliefs = holds(scopes, 'beliefs:read');
  return { readsBeliefs, readsRetracted: readsBeliefs || holds(scopes, 'receipts:read') };
}
