// The typed client of the RETRACT API, browser-safe (no node imports): the dashboard imports it as
// it is; Node callers import node.ts, which adds the `ws` WebSocket for subscriptions.
import type { Client as WsClient } from 'graphql-ws';
import type { ResultOf, VariablesOf, AnyDocument, Checked } from './graphql.js';
import { dataOf, post, type PostOptions } from './transport.js';
import { subscribe, wsClient, wsUrl } from './subscriptions.js';
import * as op from './operations.js';
import { type BeliefReads, beliefReads } from './scopes.js';

export { graphql, type Json, type ResultOf, type VariablesOf, type AnyDocument, type Checked } from './graphql.js';
export { BeliefFields, MoneyFields, TotalsFields } from './fragments.js';
export {
  dataOf,
  post,
  postRaw,
  queryText,
  RetractApiError,
  type GqlResponse,
  type PostOptions,
  type WireError,
} from './transport.js';
export { iterate, subscribe, wsClient, wsUrl, type SubscribeSink } from './subscriptions.js';
export { beliefReads, grants, type BeliefReads } from './scopes.js';
export * as operations from './operations.js';

// The shapes an agent sees, each read off the document that asks for it.
export type Agent = ResultOf<typeof op.VIEWER>['viewer'];
export type SearchInput = VariablesOf<typeof op.SEARCH>['input'];
export type SearchResult = ResultOf<typeof op.SEARCH>['search'];
export type Belief = SearchResult['hits'][number]['belief'];
export type AssertBeliefInput = VariablesOf<typeof op.ASSERT_BELIEF>['input'];
/** Beliefs the answer names but the caller did not write are present only where its scopes read them. */
export type AssertBeliefResult = ResultOf<typeof op.ASSERT_BELIEF>['assertBelief'];
export type Retraction = ResultOf<typeof op.RETRACT_BELIEF>['retractBelief'];
export type Totals = Retraction['totals'];
export type Money = Totals['exposure'][number];
export type Preview = ResultOf<typeof op.PREVIEW_RETRACTION>['previewRetraction'];
export type ProposeEffectInput = VariablesOf<typeof op.PROPOSE_EFFECT>['input'];
export type ProposeEffectResult = ResultOf<typeof op.PROPOSE_EFFECT>['proposeEffect'];
export type Effect = ResultOf<typeof op.COMPLETE_EFFECT>['completeEffect'];
export type Reversal = ResultOf<typeof op.CONFIRM_REVERSAL>['confirmReversal'];
export type RetractionEvent = ResultOf<typeof op.RETRACTION_EVENTS>['retractionEvents'];
export type RetractionEventGranularity = NonNullable<VariablesOf<typeof op.RETRACTION_EVENTS>['granularity']>;

/** Raised by turn() when READ–THINK–COMMIT kept being invalidated; `reasons` lists every attempt. */
export class TurnGaveUp extends Error {
  constructor(readonly reasons: string[]) {
    super(`turn gave up after ${reasons.length} attempt(s): ${reasons.join('; ')}`);
    this.name = 'TurnGaveUp';
  }
}

export interface ClientOptions {
  /** The server's GraphQL endpoint, e.g. http://127.0.0.1:4000/graphql. */
  url: string;
  token: string;
  fetch?: typeof fetch;
  /** WebSocket implementation for subscriptions (node.ts passes the `ws` package's). */
  webSocketImpl?: unknown;
}

export interface TurnOptions<D extends Omit<AssertBeliefInput, 'basedOn'>> {
  /** READ: what to search for (or a function of the attempt number). */
  read: SearchInput | ((attempt: number) => SearchInput);
  /** THINK: runs outside any transaction (model inference goes here); null means decide nothing. */
  think: (read: SearchResult, attempt: number) => Promise<D | null> | D | null;
  /** COMMIT: defaults to assertBelief with basedOn = the READ's snapshot. */
  commit?: (decision: D, snapshot: string) => Promise<AssertBeliefResult>;
  /** Attempts in all (default 3). */
  maxAttempts?: number;
}

/**
 * A typed client for agents. `request` sends any typed document; the named methods are the agent's
 * everyday operations. An error answer throws RetractApiError with the server's code. `turn()` runs
 * READ, THINK (outside any transaction), COMMIT, and re-runs READ and THINK when a premise fell or
 * the claim changed since the READ. The first assertion or proposal asks the server for the token's own
 * scopes (viewer), once: answers then name the beliefs the token may read, and only those.
 */
export class RetractClient {
  private ws: WsClient | null = null;
  private reads: Promise<BeliefReads> | null = null;
  constructor(private readonly opts: ClientOptions) {}

  get token(): string {
    return this.opts.token;
  }

  /** Sends one typed operation over HTTP; resolves to its typed `data`, throws RetractApiError on errors. */
  async request<D extends AnyDocument>(
    document: D & Checked<D>,
    ...variables: {} extends VariablesOf<D> ? [VariablesOf<D>?] : [VariablesOf<D>]
  ): Promise<ResultOf<D>> {
    const opts: PostOptions = { token: this.opts.token, fetch: this.opts.fetch };
    return dataOf(await post(this.opts.url, document, (variables[0] ?? {}) as VariablesOf<D>, opts));
  }

  /** This client's graphql-ws connection (opened on first use, closed by close()). */
  socket(): WsClient {
    this.ws ??= wsClient(wsUrl(this.opts.url), this.opts.token, {
      webSocketImpl: this.opts.webSocketImpl,
      retryAttempts: 5,
    });
    return this.ws;
  }

  async viewer(): Promise<Agent> {
    return (await this.request(op.VIEWER)).viewer;
  }

  async search(input: SearchInput): Promise<SearchResult> {
    return (await this.request(op.SEARCH, { input })).search;
  }

  async beliefByClaim(claimKey: string): Promise<Belief | null> {
    return (await this.request(op.BELIEF_BY_CLAIM, { claimKey })).beliefByClaim;
  }

  async assertBelief(input: AssertBeliefInput): Promise<AssertBeliefResult> {
    return (await this.request(op.ASSERT_BELIEF, { input, ...(await this.readVars()) })).assertBelief;
  }

  async retractBelief(beliefId: string, reason: string): Promise<Retraction> {
    return (await this.request(op.RETRACT_BELIEF, { input: { beliefId, reason } })).retractBelief;
  }

  async previewRetraction(beliefId: string): Promise<Preview> {
    return (await this.request(op.PREVIEW_RETRACTION, { beliefId })).previewRetraction;
  }

  async proposeEffect(input: ProposeEffectInput): Promise<ProposeEffectResult> {
    const { readsRetracted } = await this.readVars();
    return (await this.request(op.PROPOSE_EFFECT, { input, readsRetracted })).proposeEffect;
  }

  /** What this token may read back: its own scopes, asked once (concurrent first calls share the question), again after a failure. */
  private readVars(): Promise<BeliefReads> {
    this.reads ??= this.viewer()
      .then((v) => beliefReads(v.scopes))
      .catch((e: unknown) => {
        this.reads = null;
        throw e;
      });
    return this.reads;
  }

  async claimEffect(kinds?: string[]): Promise<Effect | null> {
    return (await this.request(op.CLAIM_EFFECT, { input: kinds ? { kinds } : null })).claimEffect;
  }

  async completeEffect(effectId: string, externalRef: string): Promise<Effect> {
    return (await this.request(op.COMPLETE_EFFECT, { input: { effectId, externalRef } })).completeEffect;
  }

  async failEffect(effectId: string, reason: string): Promise<Effect> {
    return (await this.request(op.FAIL_EFFECT, { input: { effectId, reason } })).failEffect;
  }

  async confirmReversal(reversalId: string, providerRef: string): Promise<Reversal> {
    return (await this.request(op.CONFIRM_REVERSAL, { input: { reversalId, providerRef } })).confirmReversal;
  }

  /**
   * Streams retraction events over graphql-ws from after `after` (or from now), one per item or, with
   * `granularity: 'LEVEL'`, one per cascade level and kind. Call the returned function to stop.
   */
  onRetractionEvents(
    handler: (e: RetractionEvent) => void,
    opts: { after?: string | null; granularity?: RetractionEventGranularity; onError?: (e: unknown) => void } = {},
  ): () => void {
    return subscribe(
      this.socket(),
      op.RETRACTION_EVENTS,
      { after: opts.after ?? null, granularity: opts.granularity ?? 'BELIEF' },
      {
        next: (m) => m.data && handler(m.data.retractionEvents),
        error: (e) => opts.onError?.(e),
      },
    ).unsubscribe;
  }

  /**
   * One turn: READ (search → snapshot), THINK (outside any transaction), COMMIT (assertBelief with
   * basedOn). On PremiseRetracted or ClaimChangedSinceRead it re-runs READ and THINK, up to
   * maxAttempts in all, then throws TurnGaveUp with every reason. Other outcomes are returned.
   */
  async turn<D extends Omit<AssertBeliefInput, 'basedOn'>>(
    o: TurnOptions<D>,
  ): Promise<{ result: AssertBeliefResult | null; attempts: number }> {
    const max = o.maxAttempts ?? 3;
    const reasons: string[] = [];
    // Asked before the first READ, so no extra round trip falls between a READ and its COMMIT.
    await this.readVars();
    for (let attempt = 1; attempt <= max; attempt++) {
      const read = await this.search(typeof o.read === 'function' ? o.read(attempt) : o.read);
      const decision = await o.think(read, attempt);
      if (!decision) return { result: null, attempts: attempt };
      const result = o.commit
        ? await o.commit(decision, read.snapshot)
        : await this.assertBelief({ ...decision, basedOn: read.snapshot });
      if (result.__typename === 'PremiseRetracted')
        reasons.push(
          `premise ${result.premise ? `${result.premise.id} (${result.premise.claimKey})` : '(not readable with this token)'} was retracted after the READ`,
        );
      else if (result.__typename === 'ClaimChangedSinceRead')
        reasons.push(`claim ${result.claimKey} was written after the READ`);
      else return { result, attempts: attempt };
    }
    throw new TurnGaveUp(reasons);
  }

  async close(): Promise<void> {
    await this.ws?.dispose();
    this.ws = null;
  }
}
