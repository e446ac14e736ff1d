import type { Scope } from '../../src/agent/scopes';
import type { Fixture } from './api-fixture';

/**
 * Every root operation of the API with the scope it requires — the table the docs state ("which
 * token may call what"). `authenticated` means any valid token; a list means any one of those
 * scopes (admin implies every scope). Each entry carries a real call against a fleetFixture, with
 * inputs that would write if the call were allowed, so a refused call that writes anything shows up.
 *
 * `ids` lists the global-id arguments the call takes (empty: it takes none); `nullable` says the
 * root field is nullable (a refused or unknown id answers `{ field: null }` rather than `data: null`).
 */
export interface Operation {
  field: string;
  root: 'query' | 'mutation' | 'subscription';
  scopes: 'authenticated' | readonly Scope[];
  document: string;
  variables: (f: Fixture) => Record<string, unknown>;
  ids: readonly string[];
  nullable: boolean;
}

const op = (o: Operation) => o;

export const OPERATIONS: readonly Operation[] = [
  // ------------------------------------------------------------------ queries
  op({
    field: 'node',
    root: 'query',
    scopes: ['beliefs:read'],
    ids: ['id'],
    nullable: true,
    document: 'query($id: ID!) { node(id: $id) { id __typename } }',
    variables: (f) => ({ id: f.p }),
  }),
  op({
    field: 'viewer',
    root: 'query',
    scopes: 'authenticated',
    ids: [],
    nullable: false,
    document: '{ viewer { id name fleet scopes } }',
    variables: () => ({}),
  }),
  op({
    field: 'belief',
    root: 'query',
    scopes: ['beliefs:read'],
    ids: ['id'],
    nullable: true,
    document: 'query($id: ID!) { belief(id: $id) { id claimKey } }',
    variables: (f) => ({ id: f.p }),
  }),
  op({
    field: 'beliefByClaim',
    root: 'query',
    scopes: ['beliefs:read'],
    ids: [],
    nullable: true,
    document: 'query($k: String!) { beliefByClaim(claimKey: $k) { id } }',
    variables: (f) => ({ k: f.keys.p }),
  }),
  op({
    field: 'search',
    root: 'query',
    scopes: ['beliefs:read'],
    ids: [],
    nullable: false,
    document:
      'query($t: String!) { search(input: { text: $t, k: 5, includeRetracted: true }) { snapshot hits { score belief { id } } } }',
    variables: (f) => ({ t: `${f.tag}/p holds` }),
  }),
  op({
    field: 'beliefs',
    root: 'query',
    scopes: ['beliefs:read'],
    ids: [],
    nullable: false,
    document: '{ beliefs(first: 50) { totalCount edges { node { id } } } }',
    variables: () => ({}),
  }),
  op({
    field: 'previewRetraction',
    root: 'query',
    scopes: ['beliefs:read'],
    ids: ['beliefId'],
    nullable: false,
    // Only the fields beliefs:read opens: the preview's totals are a receipt's figures (receipts:read).
    document: 'query($id: ID!) { previewRetraction(beliefId: $id) { root { id } beliefs { totalCount } } }',
    variables: (f) => ({ id: f.p }),
  }),
  op({
    field: 'retraction',
    root: 'query',
    scopes: ['receipts:read'],
    ids: ['id'],
    nullable: true,
    document: 'query($id: ID!) { retraction(id: $id) { id reason } }',
    variables: (f) => ({ id: f.retraction }),
  }),
  op({
    field: 'retractions',
    root: 'query',
    scopes: ['receipts:read'],
    ids: [],
    nullable: false,
    document: '{ retractions(first: 50) { totalCount edges { node { id } } } }',
    variables: () => ({}),
  }),
  op({
    field: 'reinstatement',
    root: 'query',
    scopes: ['receipts:read'],
    ids: ['id'],
    nullable: true,
    document: 'query($id: ID!) { reinstatement(id: $id) { id status } }',
    variables: (f) => ({ id: f.reinstatement }),
  }),
  op({
    field: 'reinstatements',
    root: 'query',
    scopes: ['receipts:read'],
    ids: [],
    nullable: false,
    document: '{ reinstatements(first: 50) { totalCount edges { node { id } } } }',
    variables: () => ({}),
  }),
  op({
    field: 'effects',
    root: 'query',
    scopes: ['effects:propose', 'effects:execute', 'receipts:read'],
    ids: [],
    nullable: false,
    document: '{ effects(first: 50) { totalCount edges { node { id } } } }',
    variables: () => ({}),
  }),
  op({
    field: 'effectKinds',
    root: 'query',
    scopes: 'authenticated',
    ids: [],
    nullable: false,
    document: '{ effectKinds { kind reversible } }',
    variables: () => ({}),
  }),
  op({
    field: 'reversals',
    root: 'query',
    scopes: ['receipts:read'],
    ids: [],
    nullable: false,
    document: '{ reversals(first: 50) { totalCount edges { node { id } } } }',
    variables: () => ({}),
  }),
  op({
    field: 'openMoney',
    root: 'query',
    scopes: ['receipts:read'],
    ids: [],
    nullable: false,
    document: '{ openMoney { owedCount owed { amountMinor currency } inFlightCount } }',
    variables: () => ({}),
  }),
  op({
    field: 'contradictions',
    root: 'query',
    scopes: ['beliefs:read', 'contradictions:adjudicate'],
    ids: [],
    nullable: false,
    document: '{ contradictions { id status } }',
    variables: () => ({}),
  }),
  // ------------------------------------------------------------------ mutations
  op({
    field: 'createAgent',
    root: 'mutation',
    scopes: ['admin'],
    ids: [],
    nullable: false,
    document:
      'mutation($n: String!) { createAgent(input: { name: $n, scopes: ["beliefs:read"] }) { token agent { id } } }',
    variables: (f) => ({ n: `${f.tag}-new-agent` }),
  }),
  op({
    field: 'assertBelief',
    root: 'mutation',
    scopes: ['beliefs:write'],
    ids: ['input.derivedFrom'],
    nullable: false,
    document:
      'mutation($k: String!, $from: [ID!]) { assertBelief(input: { claimKey: $k, statement: "a new belief", value: 1, derivedFrom: $from }) { __typename } }',
    variables: (f) => ({ k: `${f.tag}/new`, from: [f.p] }),
  }),
  op({
    field: 'addJustification',
    root: 'mutation',
    scopes: ['beliefs:write'],
    ids: ['input.beliefId', 'input.premises'],
    nullable: false,
    document: 'mutation($b: ID!, $p: [ID!]!) { addJustification(input: { beliefId: $b, premises: $p }) { id } }',
    variables: (f) => ({ b: f.d, p: [f.e] }),
  }),
  op({
    field: 'retractBelief',
    root: 'mutation',
    scopes: ['beliefs:retract'],
    ids: ['input.beliefId'],
    nullable: false,
    document: 'mutation($b: ID!) { retractBelief(input: { beliefId: $b, reason: "matrix" }) { id } }',
    variables: (f) => ({ b: f.p }),
  }),
  op({
    field: 'adjudicateContradiction',
    root: 'mutation',
    scopes: ['contradictions:adjudicate'],
    ids: ['contradictionId'],
    nullable: false,
    document: 'mutation($c: ID!) { adjudicateContradiction(contradictionId: $c) { id status verdict } }',
    variables: (f) => ({ c: f.c1 }),
  }),
  op({
    field: 'resolveContradiction',
    root: 'mutation',
    scopes: ['contradictions:adjudicate'],
    ids: ['input.contradictionId'],
    nullable: false,
    document:
      'mutation($c: ID!) { resolveContradiction(input: { contradictionId: $c, verdict: KEEP_EXISTING, rationale: "matrix" }) { id status } }',
    variables: (f) => ({ c: f.c2 }),
  }),
  op({
    field: 'registerEffectKind',
    root: 'mutation',
    scopes: ['admin'],
    ids: [],
    nullable: false,
    document: 'mutation { registerEffectKind(input: { kind: "matrix_kind", reversible: true }) { kind } }',
    variables: () => ({}),
  }),
  op({
    field: 'proposeEffect',
    root: 'mutation',
    scopes: ['effects:propose'],
    ids: ['input.supportedBy'],
    nullable: false,
    document:
      'mutation($s: [ID!]!, $k: String!) { proposeEffect(input: { kind: "refund", amount: { amountMinor: 500, currency: "USD" }, supportedBy: $s, idempotencyKey: $k }) { __typename } }',
    variables: (f) => ({ s: [f.d], k: `${f.tag}:matrix` }),
  }),
  op({
    field: 'claimEffect',
    root: 'mutation',
    scopes: ['effects:execute'],
    ids: [],
    nullable: true,
    document: 'mutation { claimEffect(input: { kinds: ["refund"] }) { id status } }',
    variables: () => ({}),
  }),
  op({
    field: 'completeEffect',
    root: 'mutation',
    scopes: ['effects:execute'],
    ids: ['input.effectId'],
    nullable: false,
    document: 'mutation($e: ID!) { completeEffect(input: { effectId: $e, externalRef: "exec-ref-1" }) { id status } }',
    variables: (f) => ({ e: f.executing }),
  }),
  op({
    field: 'failEffect',
    root: 'mutation',
    scopes: ['effects:execute'],
    ids: ['input.effectId'],
    nullable: false,
    document: 'mutation($e: ID!) { failEffect(input: { effectId: $e, reason: "matrix" }) { id status } }',
    variables: (f) => ({ e: f.pending }),
  }),
  op({
    field: 'confirmReversal',
    root: 'mutation',
    scopes: ['effects:execute'],
    ids: ['input.reversalId'],
    nullable: false,
    document:
      'mutation($r: ID!) { confirmReversal(input: { reversalId: $r, providerRef: "prv_matrix_1" }) { id status } }',
    variables: (f) => ({ r: f.reversal }),
  }),
  op({
    field: 'reinstateRetraction',
    root: 'mutation',
    scopes: ['beliefs:retract'],
    ids: ['input.retractionId'],
    nullable: false,
    document: 'mutation($r: ID!) { reinstateRetraction(input: { retractionId: $r, reason: "matrix" }) { __typename } }',
    variables: (f) => ({ r: f.retraction }),
  }),
  op({
    field: 'restoreEffect',
    root: 'mutation',
    scopes: ['effects:propose'],
    ids: ['effectId'],
    nullable: false,
    document: 'mutation($e: ID!) { restoreEffect(effectId: $e) { id status } }',
    variables: (f) => ({ e: f.cancelled }),
  }),
  // ------------------------------------------------------------------ subscription
  op({
    field: 'retractionEvents',
    root: 'subscription',
    scopes: ['receipts:read'],
    ids: [],
    nullable: false,
    document: 'subscription { retractionEvents { __typename cursor } }',
    variables: () => ({}),
  }),
];

/** The scopes a token must lack to be refused `o` (every one that would grant it, and admin). */
export function grantingScopes(o: Operation): Scope[] {
  return o.scopes === 'authenticated' ? [] : [...o.scopes, 'admin'];
}
