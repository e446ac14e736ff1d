// The retract form: retracts the selected belief with a reason and shows its receipt.
import { gql } from './api';
import { applyRetractionUnlessPlayed } from './cascade-player';
import { el } from './elements';
import { showError } from './notices';
import { RETRACT_BELIEF } from './operations';
import { ask } from './page-events';
import { page } from './page-state';
import { canRetract, readVars } from './scopes';

export async function runRetract(): Promise<void> {
  const node = page.selected;
  if (!node || node.kind !== 'belief' || !canRetract()) return;
  const reason = el.retractReason.value.trim();
  if (!reason) {
    el.retractNote.textContent = 'A reason is required: it is recorded on the receipt.';
    el.retractReason.setAttribute('aria-invalid', 'true');
    el.retractReason.focus();
    return;
  }
  el.retractReason.removeAttribute('aria-invalid');
  el.retractButton.disabled = true;
  el.retractButton.setAttribute('aria-busy', 'true');
  el.retractNote.textContent = 'Retracting…';
  try {
    const r = (await gql(RETRACT_BELIEF, { input: { beliefId: node.id, reason }, first: 100, ...readVars() }))
      .retractBelief;
    page.previewFor = null;
    el.previewPanel.hidden = true;
    page.graph?.setPreview(null);
    el.retractReason.value = '';
    el.retractNote.textContent = `Retracted: ${r.totals.beliefsRetracted} beliefs, ${r.totals.effectsCancelled} effects cancelled, ${r.totals.effectsReached} reached.`;
    ask('showReceipt', r);
    applyRetractionUnlessPlayed(r);
  } catch (err) {
    el.retractNote.textContent = '';
    showError(err);
  } finally {
    el.retractButton.removeAttribute('aria-busy');
    el.retractButton.disabled = page.selected?.kind === 'belief' && page.selected.status === 'RETRACTED';
  }
}
