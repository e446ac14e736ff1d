/** Scopes exactly as DESIGN lists them. A scope proves a grant, not who the caller is. */
export const SCOPES = [
  'beliefs:read',
  'beliefs:write',
  'beliefs:retract',
  'effects:propose',
  'effects:execute',
  'contradictions:adjudicate',
  'receipts:read',
  'admin',
] as const;
export type Scope = (typeof SCOPES)[number];
