// Fetching belief neighbourhoods: one belief with its premises, dependents and effects, cached for the detail panel.
import { gql } from './api';
import { BELIEF_NEIGHBORHOOD } from './operations';
import { page } from './page-state';
import { readVars } from './scopes';
import type { BeliefDetail } from './types';

const DEPENDENTS_PAGE = 50;

export async function fetchBelief(id: string): Promise<BeliefDetail | null> {
  const data = await gql(BELIEF_NEIGHBORHOOD, { id, dependentsFirst: DEPENDENTS_PAGE, ...readVars() });
  if (data.belief) page.details.set(data.belief.id, data.belief);
  return data.belief;
}

export async function inChunks<T, R>(items: T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return out;
}

export function uniq<T extends { id: string }>(xs: T[]): T[] {
  const m = new Map<string, T>();
  for (const x of xs) m.set(x.id, x);
  return [...m.values()];
}
