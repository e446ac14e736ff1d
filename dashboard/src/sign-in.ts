// Signing in with a pasted bearer token (checked by asking who it is) and signing out, which forgets the page.
import { gql, setToken } from './api';
import { clear, h } from './dom';
import { el } from './elements';
import { startFeed } from './feed-panel';
import { clearHistory, loadHistory } from './history-panel';
import { clearError } from './notices';
import { VIEWER } from './operations';
import { page } from './page-state';
import { runSearch } from './search-panel';
import type { Viewer } from './types';

export async function signIn(token: string, fromStorage = false): Promise<void> {
  el.signinError.textContent = '';
  el.signIn.disabled = true;
  setToken(token);
  try {
    const data = await gql(VIEWER, {});
    onSignedIn(data.viewer);
  } catch (err) {
    setToken(null);
    el.signinError.textContent = fromStorage
      ? 'The saved session is no longer valid. Paste a token to sign in.'
      : `Sign-in failed: ${(err as Error).message}`;
    el.tokenInput.focus();
  } finally {
    el.signIn.disabled = false;
  }
}

function onSignedIn(v: Viewer): void {
  page.viewer = v;
  el.tokenInput.value = '';
  el.viewerName.textContent = v.name;
  el.viewerFleet.textContent = `fleet ${v.fleet}`;
  el.viewerScopes.textContent = `scopes: ${v.scopes.join(', ') || 'none'}`;
  el.viewerScopes.title = el.viewerScopes.textContent;
  el.viewer.hidden = false;
  el.signinView.hidden = true;
  el.appView.hidden = false;
  clearError();
  startFeed();
  void loadHistory();
  void runSearch();
  el.searchInput.focus();
}

export function signOut(message?: string): void {
  page.feed?.stop();
  page.feed = null;
  page.viewer = null;
  setToken(null);
  page.graph?.clearAll();
  page.details.clear();
  page.selected = null;
  page.previewFor = null;
  page.receiptShown = null;
  page.committedSeen.clear();
  clear(el.searchResults);
  clear(el.feed);
  clearHistory();
  el.feedEmpty.hidden = false;
  el.searchSummary.textContent = '';
  el.receipt.hidden = true;
  el.actions.hidden = true;
  el.previewPanel.hidden = true;
  el.detail.replaceChildren(h('p', { className: 'muted' }, 'Nothing selected.'));
  el.graphEmpty.hidden = false;
  el.viewer.hidden = true;
  el.appView.hidden = true;
  el.signinView.hidden = false;
  el.errorBanner.hidden = true;
  el.signinError.textContent = message ?? '';
  el.tokenInput.focus();
}
