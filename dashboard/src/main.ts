// The dashboard page: wires the controls of index.html to the panels, names which panel answers each request one
// panel makes of another (page-events.ts), and restores a saved session.
import './style.css';
import { loadToken } from './api';
import { el } from './elements';
import { loadGraph, refreshSelectedIf } from './graph-panel';
import { onSessionExpired } from './notices';
import { answer } from './page-events';
import { page } from './page-state';
import { runPreview } from './preview-panel';
import { loadReceipt, showReceipt } from './receipt-panel';
import { loadReinstatement } from './reinstatement-panel';
import { runRetract } from './retract-panel';
import { markSearchItem, runSearch } from './search-panel';
import { signIn, signOut } from './sign-in';
import { initTimeSlider, onGraphLoaded } from './time-slider';

answer('openGraph', (beliefId) => void loadGraph(beliefId));
answer('openReceipt', (retractionId) => void loadReceipt(retractionId));
answer('showReceipt', showReceipt);
answer('openReinstatement', (reinstatementId) => void loadReinstatement(reinstatementId));
answer('beliefStatus', ({ id, status }) => markSearchItem(id, status));
answer('nodeChanged', refreshSelectedIf);
answer('graphLoaded', onGraphLoaded);

onSessionExpired((message) => signOut('Your session is no longer valid: ' + message));

el.signinForm.addEventListener('submit', (ev) => {
  ev.preventDefault();
  const token = el.tokenInput.value.trim().replace(/^Bearer\s+/i, '');
  if (!token) {
    el.signinError.textContent = 'Paste a token first.';
    el.tokenInput.focus();
    return;
  }
  void signIn(token);
});
el.signOut.addEventListener('click', () => signOut());

let searchTimer: ReturnType<typeof setTimeout> | null = null;
el.searchForm.addEventListener('submit', (ev) => {
  ev.preventDefault();
  if (searchTimer) clearTimeout(searchTimer);
  void runSearch();
});
el.searchInput.addEventListener('input', () => {
  if (searchTimer) clearTimeout(searchTimer);
  searchTimer = setTimeout(() => void runSearch(), 350);
});
el.searchStatus.addEventListener('change', () => void runSearch());

const reload = () => {
  if (page.graph?.rootId) void loadGraph(page.graph.rootId);
};
el.levelsUp.addEventListener('change', reload);
el.levelsDown.addEventListener('change', reload);

el.previewButton.addEventListener('click', () => void runPreview());
el.retractForm.addEventListener('submit', (ev) => {
  ev.preventDefault();
  void runRetract();
});

initTimeSlider();

window.addEventListener('resize', () => page.graph?.resize());

// A test hook: drop the socket as a network failure would, to exercise resume-from-cursor.
(window as unknown as { __retractDashboard: unknown }).__retractDashboard = {
  dropConnection: () => page.feed?.dropConnection(),
  lastCursor: () => page.feed?.lastCursor ?? null,
};

const saved = loadToken();
if (saved) void signIn(saved, true);
else el.tokenInput.focus();
