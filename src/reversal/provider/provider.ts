/**
 * The contract between the reversal dispatcher and whatever moves money back.
 *
 * RETRACT never moves money itself. A provider adapter delivers a reversal to an outside provider and reports what
 * the provider said. Only a `confirmed` outcome carries a reference, and that reference always comes from the
 * provider's own reply: an adapter never invents one.
 */

/** One reversal as handed to a provider. `idempotencyKey` is stable across every re-send of the same reversal. */
export interface ReversalRequest {
  /** Derived from the effect's own key; every delivery of this reversal uses it, so the provider pays at most once. */
  idempotencyKey: string;
  reversalId: string;
  effectId: string;
  effectKind: string;
  /** The provider's reference for the original effect (what is being reversed), when known. */
  effectExternalRef: string | null;
  amount: { amountMinor: number; currency: string } | null;
  payload: unknown;
}

/**
 * What the provider said.
 * - `confirmed`: the provider acknowledged the reversal and returned its own reference.
 * - `failed`: the provider refused it (a permanent 4xx); no money moved under this key.
 * - `retry_later`: nothing conclusive (transient trouble through every attempt, a protocol violation, or an abort).
 *   The money may or may not have moved: leave the reversal DISPATCHED; lease expiry re-sends under the same key.
 */
export type ProviderOutcome =
  | { outcome: 'confirmed'; providerRef: string }
  | { outcome: 'failed'; reason: string }
  | { outcome: 'retry_later'; reason: string };

/** A provider adapter. `send` resolves with an outcome for provider and network trouble; it does not reject for them. */
export interface ReversalProvider {
  readonly id: string;
  send(req: ReversalRequest, opts?: { signal?: AbortSignal }): Promise<ProviderOutcome>;
}

/** Minimal structured logger (a pino logger fits). */
export interface ProviderLogger {
  debug(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}
