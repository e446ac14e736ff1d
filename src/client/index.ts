import { createClient, type Client as WsClient } from 'graphql-ws';
import type * as T from './types';

export type * from './types';

/** An error the API answered with; `code` is its extensions.code (BAD_USER_INPUT, FORBIDDEN, …). */
export class RetractApiError extends Error {
  constructor(message: string, readonly code: string | undefined, readonly field: string | undefined, readonly errors: unknown[]) {
    super(message);
    this.name = 'RetractApiError';
  }
}

/** Raised by turn() when READ–THINK–COMMIT kept being invalidated; `reasons` lists every attempt. */
export class TurnGaveUp extends Error {
  constructor(readonly reasons: string[]) {
    super(`turn gave up after ${reasons.length} attempt(s): ${reasons.join('; ')}`);
    this.name = 'TurnGaveUp';
  }
}

const BELIEF = 'id claimKey statement value status evidence createdAt';
const TOTALS = `beliefsRetracted effectsCancelled effectsReached reversalsOwed unreachable
  exposure { amountMinor currency } owed { amountMinor currency } unreachableAmount { amountMinor currency } settled { amountMinor currency }`;
const EFFECT = 'id kind status idempotencyKey externalRef amount { amountMinor currency }';

export interface ClientOptions {
  /** The server's GraphQL endpoint, e.g. http://127.0.0.1:4000/graphql. */
  url: string;
  token: string;
  fetch?: typeof fetch;
  /** WebSocket implementation for subscriptions (Node: the `ws` package's WebSocket). */
  webSocketImpl?: unknown;
}

export interface TurnOptions<D extends Omit<T.AssertBeliefInput, 'basedOn'>> {
  /** READ: what to search for (or a function of the attempt number). */
  read: T.SearchInput | ((attempt: number) => T.SearchInput);
  /** THINK: runs outside any transaction (model inference goes here); null means decide nothing. */
  think: (read: T.SearchResult, attempt: number) => Promise<D | null> | D | null;
  /** COMMIT: defaults to assertBelief with basedOn = the READ's snapshot. */
  commit?: (decision: D, snapshot: string) => Promise<T.AssertBeliefResult>;
  /** Attempts in all (default 3). */
  maxAttempts?: number;
}

/**
 * A typed client for agents. Operations return the API's shapes; an error answer throws
 * RetractApiError with the server's code. `turn()` runs READ, THINK (outside any transaction),
 * COMMIT, and re-runs READ and THINK when a premise fell or the claim changed since the READ.
 */
export class RetractClient {
  private ws: WsClient | null = null;
  private readonly doFetch: typeof fetch;
  constructor(private readonly opts: ClientOptions) {
    this.doFetch = opts.fetch ?? fetch;
  }

  /** Sends one operation over HTTP; resolves to `data`, throws RetractApiError on errors. */
  async request<R>(query: string, variables: Record<string, unknown> = {}): Promise<R> {
    const res = await this.doFetch(this.opts.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.opts.token}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json().catch(() => null)) as { data?: R; errors?: Array<{ message: string; extensions?: { code?: string; field?: string } }> } | null;
    if (!body) throw new RetractApiError(`HTTP ${res.status} with no JSON body`, undefined, undefined, []);
    if (body.errors?.length) {
      const e = body.errors[0]!;
      throw new RetractApiError(e.message, e.extensions?.code, e.extensions?.field, body.errors);
    }
    return body.data as R;
  }

  async viewer(): Promise<T.Agent> {
    return (await this.request<{ viewer: T.Agent }>('{ viewer { id name fleet scopes } }')).viewer;
  }

  async search(input: T.SearchInput): Promise<T.SearchResult> {
    return (await this.request<{ search: T.SearchResult }>(`query($input: SearchInput!) { search(input: $input) { snapshot hits { score belief { ${BELIEF} } } } }`, { input })).search;
  }

  async beliefByClaim(claimKey: string): Promise<T.Belief | null> {
    return (await this.request<{ beliefByClaim: T.Belief | null }>(`query($k: String!) { beliefByClaim(claimKey: $k) { ${BELIEF} } }`, { k: claimKey })).beliefByClaim;
  }

  async assertBelief(input: T.AssertBeliefInput): Promise<T.AssertBeliefResult> {
    return (await this.request<{ assertBelief: T.AssertBeliefResult }>(`mutation($input: AssertBeliefInput!) { assertBelief(input: $input) {
      __typename
      ... on BeliefAsserted { belief { ${BELIEF} } }
      ... on BeliefCorroborated { belief { ${BELIEF} } }
      ... on ContradictionRaised { contradiction { id status existing { ${BELIEF} } } }
      ... on PremiseRetracted { premise { ${BELIEF} } }
      ... on ClaimChangedSinceRead { claimKey current { ${BELIEF} } }
    } }`, { input })).assertBelief;
  }

  async retractBelief(beliefId: string, reason: string): Promise<T.Retraction> {
    return (await this.request<{ retractBelief: T.Retraction }>(`mutation($input: RetractBeliefInput!) { retractBelief(input: $input) { id reason root { id claimKey } totals { ${TOTALS} } } }`, { input: { beliefId, reason } })).retractBelief;
  }

  async previewRetraction(beliefId: string): Promise<{ totals: T.Totals; survivors: Array<{ id: string }>; beliefs: { totalCount: number } }> {
    return (await this.request<{ previewRetraction: never }>(`query($id: ID!) { previewRetraction(beliefId: $id) { totals { ${TOTALS} } survivors { id } beliefs { totalCount } } }`, { id: beliefId })).previewRetraction;
  }

  async proposeEffect(input: T.ProposeEffectInput): Promise<T.ProposeEffectResult> {
    return (await this.request<{ proposeEffect: T.ProposeEffectResult }>(`mutation($input: ProposeEffectInput!) { proposeEffect(input: $input) {
      __typename ... on EffectProposed { effect { ${EFFECT} } } ... on PremiseRetracted { premise { ${BELIEF} } } } }`, { input })).proposeEffect;
  }

  async claimEffect(kinds?: string[]): Promise<T.Effect | null> {
    return (await this.request<{ claimEffect: T.Effect | null }>(`mutation($input: ClaimEffectInput) { claimEffect(input: $input) { ${EFFECT} } }`, { input: kinds ? { kinds } : null })).claimEffect;
  }

  async completeEffect(effectId: string, externalRef: string): Promise<T.Effect> {
    return (await this.request<{ completeEffect: T.Effect }>(`mutation($input: CompleteEffectInput!) { completeEffect(input: $input) { ${EFFECT} } }`, { input: { effectId, externalRef } })).completeEffect;
  }

  async failEffect(effectId: string, reason: string): Promise<T.Effect> {
    return (await this.request<{ failEffect: T.Effect }>(`mutation($input: FailEffectInput!) { failEffect(input: $input) { ${EFFECT} } }`, { input: { effectId, reason } })).failEffect;
  }

  async confirmReversal(reversalId: string, providerRef: string): Promise<T.Reversal> {
    return (await this.request<{ confirmReversal: T.Reversal }>(`mutation($input: ConfirmReversalInput!) { confirmReversal(input: $input) { id status idempotencyKey providerRef amount { amountMinor currency } } }`, { input: { reversalId, providerRef } })).confirmReversal;
  }

  /**
   * Streams retraction events over graphql-ws from after `after` (or from now), one per item or, with
   * `granularity: 'LEVEL'`, one per cascade level and kind. Call the returned function to stop.
   */
  onRetractionEvents(handler: (e: T.RetractionEvent) => void, opts: { after?: string | null; granularity?: T.RetractionEventGranularity; onError?: (e: unknown) => void } = {}): () => void {
    if (!this.ws) {
      this.ws = createClient({
        url: this.opts.url.replace(/^http/, 'ws'),
        connectionParams: { authorization: `Bearer ${this.opts.token}` },
        webSocketImpl: this.opts.webSocketImpl,
        retryAttempts: 5,
      });
    }
    return this.ws.subscribe<{ retractionEvents: T.RetractionEvent }>(
      {
        query: `subscription($after: String, $granularity: RetractionEventGranularity) {
          retractionEvents(after: $after, granularity: $granularity) { __typename cursor at retraction { id }
          ... on BeliefRetracted { depth belief { id claimKey } }
          ... on EffectCancelled { effect { id status } }
          ... on ReversalRecorded { reversal { id status } }
          ... on BeliefsRetracted { depth count beliefs { id claimKey } }
          ... on EffectsCancelled { count effects { id status } }
          ... on ReversalsRecorded { count reversals { id status } }
          ... on RetractionCommitted { totals { ${TOTALS} } } } }`,
        variables: { after: opts.after ?? null, granularity: opts.granularity ?? 'BELIEF' },
      },
      {
        next: (m) => m.data && handler(m.data.retractionEvents),
        error: (e) => opts.onError?.(e),
        complete: () => {},
      },
    );
  }

  /**
   * One turn: READ (search → snapshot), THINK (outside any transaction), COMMIT (assertBelief with
   * basedOn). On PremiseRetracted or ClaimChangedSinceRead it re-runs READ and THINK, up to
   * maxAttempts in all, then throws TurnGaveUp with every reason. Other outcomes are returned.
   */
  async turn<D extends Omit<T.AssertBeliefInput, 'basedOn'>>(o: TurnOptions<D>): Promise<{ result: T.AssertBeliefResult | null; attempts: number }> {
    const max = o.maxAttempts ?? 3;
    const reasons: string[] = [];
    for (let attempt = 1; attempt <= max; attempt++) {
      const read = await this.search(typeof o.read === 'function' ? o.read(attempt) : o.read);
      const decision = await o.think(read, attempt);
      if (!decision) return { result: null, attempts: attempt };
      const result = o.commit ? await o.commit(decision, read.snapshot) : await this.assertBelief({ ...decision, basedOn: read.snapshot });
      if (result.__typename === 'PremiseRetracted') reasons.push(`premise ${result.premise.id} (${result.premise.claimKey}) was retracted after the READ`);
      else if (result.__typename === 'ClaimChangedSinceRead') reasons.push(`claim ${result.claimKey} was written after the READ`);
      else return { result, attempts: attempt };
    }
    throw new TurnGaveUp(reasons);
  }

  async close(): Promise<void> {
    await this.ws?.dispose();
    this.ws = null;
  }
}
