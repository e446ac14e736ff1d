// What the page tells the user outside its panels: the error banner and screen-reader announcements.
import { GraphQLRequestError } from './api';
import { h } from './dom';
import { el } from './elements';
import { page } from './page-state';

let sessionExpired: (message: string) => void = () => {};

/** What to do when a request says the token is no longer good (main.ts signs out). */
export function onSessionExpired(handler: (message: string) => void): void {
  sessionExpired = handler;
}

export function announce(text: string): void {
  el.announcer.textContent = '';
  requestAnimationFrame(() => (el.announcer.textContent = text));
}

export function showError(err: unknown): void {
  if ((err as Error)?.name === 'AbortError') return;
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof GraphQLRequestError && err.unauthenticated && page.viewer) {
    sessionExpired(message);
    return;
  }
  el.errorBanner.replaceChildren(
    h('span', null, message),
    h(
      'button',
      {
        type: 'button',
        className: 'link',
        'aria-label': 'Dismiss error',
        onclick: () => (el.errorBanner.hidden = true),
      },
      'Dismiss',
    ),
  );
  el.errorBanner.hidden = false;
}

export function clearError(): void {
  el.errorBanner.hidden = true;
}
