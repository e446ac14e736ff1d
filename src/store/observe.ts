/**
 * A committed cascade, as the services report it after their transaction committed (once, whatever the retries):
 * how long the whole call took, retries and waits for the fleet lock included, and how many beliefs it moved.
 */
export interface CascadeObservation {
  kind: 'retraction' | 'reinstatement';
  seconds: number;
  beliefs: number;
}

type Observer = (o: CascadeObservation) => void;

/** Per store (a WeakMap keyed by it), so two apps in one process never see each other's cascades. */
const observers = new WeakMap<object, Set<Observer>>();

/** Listens to a store's committed cascades (GET /metrics); returns the function that stops listening. */
export function onCascade(store: object, fn: Observer): () => void {
  let set = observers.get(store);
  if (!set) observers.set(store, (set = new Set()));
  set.add(fn);
  return () => void set.delete(fn);
}

/** Tells the store's listeners of a committed cascade; nothing when no one listens. An observer's fault is not the caller's. */
export function observeCascade(store: object, o: CascadeObservation): void {
  const set = observers.get(store);
  if (!set) return;
  for (const fn of set) {
    try {
      fn(o);
    } catch {
      /* a metrics fault never fails a retraction */
    }
  }
}
