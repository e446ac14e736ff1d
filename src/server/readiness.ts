import { type Store, answers } from '../store/engine';
import { upToDate } from '../store/migrate';

/** How long /ready waits for the database before answering "not ready". */
const PROBE_MS = 2_000;

/** What /ready answers: ready when the database answers, its migrations are this server's, and the server is not draining. */
export interface Readiness {
  ready: boolean;
  body: {
    status: 'ready' | 'draining' | 'database unavailable' | 'migrations not current';
    engine: string;
    database: boolean | null;
    migrations: boolean | null;
    accepting: boolean;
  };
  // null: not checked (a draining server is not ready whatever its database says).
}

function within(p: Promise<boolean>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((r) => {
    timer = setTimeout(() => r(false), ms);
    timer.unref();
  });
  return Promise.race([p.catch(() => false), late]).finally(() => clearTimeout(timer));
}

/**
 * Readiness, as a load balancer or orchestrator asks it (distinct from /health, which says the process
 * is up): migrations are current when the database has recorded exactly the migrations this build
 * carries, so a server older or newer than its schema takes no traffic.
 */
export async function readiness(store: Store, draining: boolean): Promise<Readiness> {
  if (draining)
    return {
      ready: false,
      body: { status: 'draining', engine: store.engine, database: null, migrations: null, accepting: false },
    };
  const database = await within(answers(store.db), PROBE_MS);
  const migrations = database ? await within(upToDate(store.db), PROBE_MS) : null;
  const status = !database ? 'database unavailable' : !migrations ? 'migrations not current' : 'ready';
  return { ready: status === 'ready', body: { status, engine: store.engine, database, migrations, accepting: true } };
}
