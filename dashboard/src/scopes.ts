// What the signed-in agent's scopes open on the page (admin implies every scope); the server enforces the same.
import { grants } from '../../src/client';
import { page } from './page-state';

function hasScope(scope: string): boolean {
  return !!page.viewer && grants(page.viewer.scopes, scope);
}

/** The live feed, receipts, reversals and totals need `receipts:read` (admin implies every scope). */
export function canReadReceipts(): boolean {
  return hasScope('receipts:read');
}

/** Effects are open to either effects scope or to receipts:read. */
function canReadEffects(): boolean {
  return hasScope('effects:propose') || hasScope('effects:execute') || canReadReceipts();
}

/** The @include variables of every document that reaches effects or receipts (see operations.ts). */
export function readVars(): { canReadEffects: boolean; canReadReceipts: boolean } {
  return { canReadEffects: canReadEffects(), canReadReceipts: canReadReceipts() };
}

export function canRetract(): boolean {
  return hasScope('beliefs:retract');
}
