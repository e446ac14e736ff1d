import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { subscriptionLag } from '../../event/tailer';
import type { Store } from '../../store/engine';
import { onCascade } from '../../store/observe';
import type { RetryReason } from '../../store/tx';

const REASONS: readonly RetryReason[] = [
  'serialization_failure',
  'deadlock',
  'out_of_shared_memory',
  'citus_commit_conflict',
];

/** Sets a counter to a running total the store keeps (store.tx.stats) when Prometheus scrapes. */
function mirror(c: Counter<string>, labels: Record<string, string>, value: number) {
  c.remove(labels);
  c.inc(labels, value);
}

/**
 * What this process sees of its store without asking the database: turns (write transactions) committed and given
 * up, retries by reason, committed retractions and reinstatements, open subscriptions and the slowest one's lag, and
 * the connection pool. Returns the function that stops listening to cascades.
 */
export function registerProcessMetrics(registry: Registry, store: Store): () => void {
  const registers = [registry];
  new Counter({
    name: 'retract_turns_total',
    help: 'Write transactions (turns) committed, and given up after every retry conflicted (CONFLICT to the client).',
    labelNames: ['outcome'],
    registers,
    collect() {
      mirror(this, { outcome: 'committed' }, store.tx.stats.turns.committed);
      mirror(this, { outcome: 'given_up' }, store.tx.stats.turns.givenUp);
    },
  });
  new Counter({
    name: 'retract_tx_retries_total',
    help: 'Transaction attempts retried, by reason (citus_commit_conflict: a Citus worker aborted at COMMIT).',
    labelNames: ['reason'],
    registers,
    collect() {
      for (const reason of REASONS) mirror(this, { reason }, store.tx.stats.retriesByReason[reason] ?? 0);
    },
  });
  const cascades = {
    retraction: {
      total: new Counter({
        name: 'retract_retractions_total',
        help: 'Retractions committed by this process.',
        registers,
      }),
      seconds: new Histogram({
        name: 'retract_retraction_duration_seconds',
        help: 'Time a retraction took, retries and the wait for its fleet lock included.',
        buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers,
      }),
      beliefs: new Histogram({
        name: 'retract_retraction_cascade_beliefs',
        help: 'Beliefs one retraction took down (its root included).',
        buckets: [1, 2, 5, 10, 50, 100, 500, 1000, 5000, 10000, 50000, 100000],
        registers,
      }),
    },
    reinstatement: {
      total: new Counter({
        name: 'retract_reinstatements_total',
        help: 'Reinstatements committed by this process (BLOCKED ones included).',
        registers,
      }),
      seconds: new Histogram({
        name: 'retract_reinstatement_duration_seconds',
        help: 'Time a reinstatement took, retries and the wait for its fleet lock included.',
        buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers,
      }),
      beliefs: new Histogram({
        name: 'retract_reinstatement_cascade_beliefs',
        help: 'Beliefs one reinstatement brought back (0 when BLOCKED).',
        buckets: [0, 1, 2, 5, 10, 50, 100, 500, 1000, 5000, 10000, 50000, 100000],
        registers,
      }),
    },
  };
  const stop = onCascade(store, (o) => {
    const m = cascades[o.kind];
    m.total.inc();
    m.seconds.observe(o.seconds);
    m.beliefs.observe(o.beliefs);
  });
  new Gauge({
    name: 'retract_subscriptions_open',
    help: 'Retraction-event subscriptions open on this process (WebSocket and SSE).',
    registers,
    collect() {
      this.set(subscriptionLag(store).open);
    },
  });
  new Gauge({
    name: 'retract_subscription_lag_seconds',
    help: 'Age of the oldest event a subscription has read and its client not yet taken: the slowest subscriber (0 when all are caught up).',
    registers,
    collect() {
      this.set(subscriptionLag(store).slowestSeconds);
    },
  });
  new Gauge({
    name: 'retract_db_pool_connections',
    help: 'Database connections of this process: open (in use or idle), idle, requests waiting for one, and the pool size.',
    labelNames: ['state'],
    registers,
    collect() {
      const p = store.poolUse();
      this.set({ state: 'open' }, p.total);
      this.set({ state: 'idle' }, p.idle);
      this.set({ state: 'waiting' }, p.waiting);
      this.set({ state: 'max' }, p.max);
    },
  });
  return stop;
}
