import { Gauge, type Registry } from 'prom-client';
import type { Store } from '../../store/engine';
import { inTx } from '../../store/tx';
import { type OpenLine, openLines } from './metrics.repository';

/** The status label of each open line (db/migrations/0013_metrics.ts). */
const STATUS: Record<string, string> = {
  OWED: 'owed',
  DISPATCHED: 'in_flight',
  UNREACHABLE: 'unreachable',
  REEXECUTION_OWED: 'reexecution_owed',
};

/**
 * The gauges read from the database at scrape time, all fleets in one statement (retract_metrics_open): open money
 * by status and currency in minor units (exact: 124000 is $1,240.00), how many items hold it, the oldest OWED
 * reversal's age (the dispatcher's lag) and the oldest PENDING effect's (the executor's). Labelled by fleet only when
 * configured. `refresh()` runs before each scrape; when the database does not answer in time the gauges are emptied
 * (never stale) and retract_metrics_database_up is 0.
 */
export function registerOpenMoneyMetrics(
  registry: Registry,
  store: Store,
  fleetLabel: boolean,
): { refresh(): Promise<void> } {
  const registers = [registry];
  const by = fleetLabel ? ['fleet'] : [];
  const money = new Gauge({
    name: 'retract_open_money_minor_units',
    help: "Money still to move back, in the currency's minor units (cents), by status (owed, in_flight, unreachable, reexecution_owed) and currency.",
    labelNames: [...by, 'status', 'currency'],
    registers,
  });
  const items = new Gauge({
    name: 'retract_open_reversals',
    help: 'Open reversals (and re-executions owed) by status and currency ("none" for effects without money).',
    labelNames: [...by, 'status', 'currency'],
    registers,
  });
  const owedAge = new Gauge({
    name: 'retract_oldest_owed_reversal_age_seconds',
    help: 'Age of the oldest OWED reversal: how far the dispatcher is behind (0 when none is owed).',
    labelNames: by,
    registers,
  });
  const pendingAge = new Gauge({
    name: 'retract_oldest_pending_effect_age_seconds',
    help: 'Age of the oldest PENDING effect: how far the executor is behind (0 when none is pending).',
    labelNames: by,
    registers,
  });
  const pending = new Gauge({
    name: 'retract_pending_effects',
    help: 'Effects PENDING, waiting for the executor.',
    labelNames: by,
    registers,
  });
  const up = new Gauge({
    name: 'retract_metrics_database_up',
    help: '1 when the last scrape read the open money from the database, 0 when it failed or timed out.',
    registers,
  });

  const fleetOf = (l: OpenLine): Record<string, string> => (fleetLabel ? { fleet: l.fleet } : {});
  function publish(lines: OpenLine[], now: number) {
    for (const g of [money, items, owedAge, pendingAge, pending]) g.reset();
    const ages = new Map<
      string,
      { owed: number; pending: number; pendingCount: number; labels: Record<string, string> }
    >();
    const ageOf = (l: OpenLine) => {
      const key = fleetLabel ? l.fleet : '';
      let a = ages.get(key);
      if (!a) ages.set(key, (a = { owed: 0, pending: 0, pendingCount: 0, labels: fleetOf(l) }));
      return a;
    };
    for (const l of lines) {
      const age = Math.max(0, (now - l.oldest.getTime()) / 1000);
      const a = ageOf(l);
      if (l.status === 'PENDING_EFFECT') {
        a.pending = Math.max(a.pending, age);
        a.pendingCount += l.count;
        continue;
      }
      if (l.status === 'OWED') a.owed = Math.max(a.owed, age);
      const labels = { ...fleetOf(l), status: STATUS[l.status] ?? 'other', currency: l.currency ?? 'none' };
      items.inc(labels, l.count);
      if (l.amountMinor !== null) money.inc(labels, Number(l.amountMinor));
    }
    if (ages.size === 0 && !fleetLabel) ages.set('', { owed: 0, pending: 0, pendingCount: 0, labels: {} });
    for (const a of ages.values()) {
      owedAge.set(a.labels, a.owed);
      pendingAge.set(a.labels, a.pending);
      pending.set(a.labels, a.pendingCount);
    }
  }

  return {
    async refresh() {
      const read = inTx(store, { fleet: null, readOnly: true, maxAttempts: 1 }, (tx) => openLines(tx));
      read.catch(() => {});
      const lines = await Promise.race([
        read,
        new Promise<null>((r) => setTimeout(() => r(null), 5_000).unref()),
      ]).catch(() => null);
      if (lines === null) {
        for (const g of [money, items, owedAge, pendingAge, pending]) g.reset();
        up.set(0);
        return;
      }
      publish(lines, Date.now());
      up.set(1);
    },
  };
}
