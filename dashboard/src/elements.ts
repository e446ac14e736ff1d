// The page's fixed elements (dashboard/index.html), looked up once; a missing id fails at load, not on first use.
// Each is named for its id in camelCase: `el.searchInput` is `#search-input`.
import { byId } from './dom';

type Camel<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S;

function byIds<T extends HTMLElement, const I extends string>(
  kind: abstract new () => T,
  ...ids: I[]
): { [K in I as Camel<K>]: T } {
  const found = ids.map((id) => {
    const e = byId(id);
    if (!(e instanceof kind)) throw new Error(`#${id} in index.html is not a ${kind.name}`);
    return [id.replace(/-(\w)/g, (_, c: string) => c.toUpperCase()), e] as const;
  });
  return Object.fromEntries(found) as { [K in I as Camel<K>]: T };
}

export const el = {
  ...byIds(
    HTMLElement,
    'signin-view',
    'signin-error',
    'app-view',
    'viewer',
    'viewer-name',
    'viewer-fleet',
    'viewer-scopes',
    'connection-status',
    'error-banner',
    'announcer',
    'search-summary',
    'search-results',
    'feed',
    'feed-empty',
    'graph-empty',
    'graph',
    'graph-node-list',
    'detail',
    'actions',
    'preview-panel',
    'retract-note',
    'receipt',
  ),
  ...byIds(HTMLFormElement, 'signin-form', 'search-form', 'retract-form'),
  ...byIds(HTMLInputElement, 'token-input', 'search-input'),
  ...byIds(HTMLSelectElement, 'search-status', 'levels-up', 'levels-down'),
  ...byIds(HTMLButtonElement, 'sign-in', 'sign-out', 'preview-button', 'retract-button'),
  ...byIds(HTMLTextAreaElement, 'retract-reason'),
};
