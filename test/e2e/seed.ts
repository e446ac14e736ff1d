// Seeds a running RETRACT server through its public GraphQL API only (no service calls), so the dashboard test
// sees exactly what an agent fleet would have written. Used by test/e2e/dashboard.test.ts and by
// `npx tsx test/e2e/seed.ts <url> <bootstrap-token>` for manual runs against `npm start`.

// The API's shapes (amountMinor a JSON number), not the store's exact decimal strings.
export type { Money, Totals } from '../../src/client';
import type { Totals } from '../../src/client';

export const TOTALS_SELECTION = `beliefsRetracted effectsCancelled effectsReached reversalsOwed unreachable
  exposure { amountMinor currency } owed { amountMinor currency } unreachableAmount { amountMinor currency }
  settled { amountMinor currency }`;

/** A GraphQL POST with a bearer token; throws on any error so a seeding step never fails silently. */
export async function gql<T>(
  url: string,
  token: string,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<T> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: T; errors?: { message: string }[] };
  if (body.errors?.length || !body.data)
    throw new Error(`GraphQL ${res.status}: ${JSON.stringify(body.errors ?? body)}`);
  return body.data;
}

const ALL_SCOPES = [
  'beliefs:read',
  'beliefs:write',
  'beliefs:retract',
  'effects:propose',
  'effects:execute',
  'contradictions:adjudicate',
  'receipts:read',
  'admin',
];

/** Creates an agent in `fleet` (the bootstrap token may name any fleet), by default with every scope, and returns its token. */
export async function createAgent(
  url: string,
  bootstrapToken: string,
  fleet: string,
  name: string,
  scopes: string[] = ALL_SCOPES,
): Promise<{ id: string; token: string }> {
  const d = await gql<{ createAgent: { agent: { id: string }; token: string } }>(
    url,
    bootstrapToken,
    `mutation($input: CreateAgentInput!) { createAgent(input: $input) { agent { id } token } }`,
    { input: { fleet, name, scopes } },
  );
  return { id: d.createAgent.agent.id, token: d.createAgent.token };
}

/** Asserts one belief (optionally derived from premises) and returns its id; anything but BeliefAsserted throws. */
async function assertBelief(
  url: string,
  token: string,
  input: { claimKey: string; statement: string; value?: unknown; evidence?: string; derivedFrom?: string[] },
): Promise<string> {
  const d = await gql<{ assertBelief: { __typename: string; belief?: { id: string } } }>(
    url,
    token,
    `mutation($input: AssertBeliefInput!) { assertBelief(input: $input) { __typename ... on BeliefAsserted { belief { id } } } }`,
    { input: { value: true, ...input } },
  );
  if (d.assertBelief.__typename !== 'BeliefAsserted' || !d.assertBelief.belief)
    throw new Error(`assertBelief ${input.claimKey}: ${d.assertBelief.__typename}`);
  return d.assertBelief.belief.id;
}

async function registerKind(url: string, token: string, kind: string, reversible: boolean): Promise<void> {
  await gql(url, token, `mutation($input: RegisterEffectKindInput!) { registerEffectKind(input: $input) { kind } }`, {
    input: { kind, reversible },
  });
}

async function propose(
  url: string,
  token: string,
  kind: string,
  supportedBy: string[],
  idempotencyKey: string,
  amountMinor: number,
): Promise<string> {
  const d = await gql<{ proposeEffect: { __typename: string; effect?: { id: string } } }>(
    url,
    token,
    `mutation($input: ProposeEffectInput!) { proposeEffect(input: $input) { __typename ... on EffectProposed { effect { id } } } }`,
    { input: { kind, supportedBy, idempotencyKey, amount: { amountMinor, currency: 'USD' } } },
  );
  if (!d.proposeEffect.effect) throw new Error(`proposeEffect ${idempotencyKey}: ${d.proposeEffect.__typename}`);
  return d.proposeEffect.effect.id;
}

/** Proposes, claims and completes an effect (the only ready one of its kind), as an executor would. */
async function execute(
  url: string,
  token: string,
  kind: string,
  supportedBy: string[],
  key: string,
  amountMinor: number,
  ref: string,
): Promise<string> {
  const id = await propose(url, token, kind, supportedBy, key, amountMinor);
  const c = await gql<{ claimEffect: { id: string } | null }>(
    url,
    token,
    `mutation($input: ClaimEffectInput) { claimEffect(input: $input) { id } }`,
    { input: { kinds: [kind] } },
  );
  if (c.claimEffect?.id !== id) throw new Error(`claimEffect returned ${c.claimEffect?.id}, expected ${id}`);
  await gql(url, token, `mutation($input: CompleteEffectInput!) { completeEffect(input: $input) { id status } }`, {
    input: { effectId: id, externalRef: ref },
  });
  return id;
}

export interface PassportSeed {
  passport: string;
  identity: string;
  refundEligible: string;
  kycTier: string;
  /** Rests on the passport and, alternatively, on the address check: it survives the retraction. */
  contactTrusted: string;
  addressVerified: string;
  refund: string;
  charge: string;
  payout: string;
}

/**
 * The passport story over the API: passport → identity → refund eligibility ($1,240.00 refund executed),
 * passport → KYC tier ($89.00 card charge executed, not reversible), identity → $500.00 payout still pending,
 * and one survivor (contact.trusted, also justified by an independent address check).
 */
export async function seedPassportStory(url: string, token: string, prefix = 'customer:4411'): Promise<PassportSeed> {
  for (const [kind, reversible] of [
    ['refund', true],
    ['card_charge', false],
    ['payout', true],
  ] as const)
    await registerKind(url, token, kind, reversible);
  const who = `customer ${prefix.slice(prefix.lastIndexOf(':') + 1)}`;
  const Who = who[0]!.toUpperCase() + who.slice(1);
  const passport = await assertBelief(url, token, {
    claimKey: `${prefix}/passport.authentic`,
    statement: `The passport of ${who} is authentic`,
    evidence: 'document check #A-77',
  });
  const identity = await assertBelief(url, token, {
    claimKey: `${prefix}/identity.verified`,
    statement: `Identity of ${who} is verified`,
    derivedFrom: [passport],
  });
  const refundEligible = await assertBelief(url, token, {
    claimKey: `${prefix}/refund.eligible`,
    statement: `${Who} is eligible for a refund`,
    derivedFrom: [identity],
  });
  const kycTier = await assertBelief(url, token, {
    claimKey: `${prefix}/kyc.tier`,
    statement: `${Who} is KYC tier gold`,
    value: 'gold',
    derivedFrom: [passport],
  });
  const addressVerified = await assertBelief(url, token, {
    claimKey: `${prefix}/address.verified`,
    statement: `The address of ${who} was verified by post`,
    evidence: 'letter code 5521',
  });
  const contactTrusted = await assertBelief(url, token, {
    claimKey: `${prefix}/contact.trusted`,
    statement: `Contact details of ${who} are trusted`,
    derivedFrom: [passport],
  });
  await gql(url, token, `mutation($input: AddJustificationInput!) { addJustification(input: $input) { id } }`, {
    input: { beliefId: contactTrusted, premises: [addressVerified] },
  });
  const refund = await execute(url, token, 'refund', [refundEligible], `${prefix}:refund-1`, 124_000, 'bank-ref-1');
  const charge = await execute(url, token, 'card_charge', [kycTier], `${prefix}:charge-1`, 8_900, 'card-ref-1');
  const payout = await propose(url, token, 'payout', [identity], `${prefix}:payout-1`, 50_000);
  return { passport, identity, refundEligible, kycTier, contactTrusted, addressVerified, refund, charge, payout };
}

/** Retracts a belief through the API and returns the receipt's id and totals. */
export async function retract(
  url: string,
  token: string,
  beliefId: string,
  reason: string,
): Promise<{ id: string; totals: Totals }> {
  const d = await gql<{ retractBelief: { id: string; totals: Totals } }>(
    url,
    token,
    `mutation($input: RetractBeliefInput!) { retractBelief(input: $input) { id totals { ${TOTALS_SELECTION} } } }`,
    { input: { beliefId, reason } },
  );
  return d.retractBelief;
}

// Manual use: seed a running server (e.g. `RETRACT_BOOTSTRAP_TOKEN=… npm start`) and print a token to paste.
if (import.meta.url === `file://${process.argv[1]}`) {
  const [url = 'http://127.0.0.1:4000', bootstrap = process.env.RETRACT_BOOTSTRAP_TOKEN ?? ''] = process.argv.slice(2);
  const agent = await createAgent(url, bootstrap, 'acme', `dashboard-demo-${Date.now()}`);
  const seed = await seedPassportStory(url, agent.token);
  console.log(JSON.stringify({ token: agent.token, ...seed }, null, 2));
}
