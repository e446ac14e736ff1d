// The detail panel: what the selected belief, effect or reversal is, and which actions it offers.
import { breakable, formatTime, h } from './dom';
import { el } from './elements';
import { formatMoney } from './money';
import { ask } from './page-events';
import { page } from './page-state';
import { canReadReceipts, canRetract } from './scopes';
import { dlRow, statusBadge } from './widgets';

/** Draws the selected node, with its receipt and the graph around it a click away. */
export function renderDetail(): void {
  const node = page.selected;
  if (!node) return;
  const dl = h('dl');
  const parts: (Node | null)[] = [];
  if (node.kind === 'belief') {
    const d = page.details.get(node.id);
    parts.push(
      h(
        'h3',
        { className: `claim status-${node.status.toLowerCase()}`, 'data-testid': 'detail-claim-key' },
        breakable(node.claimKey),
      ),
      h('p', { className: 'statement' }, node.statement),
    );
    dlRow(dl, 'Status', statusBadge(node.status));
    if (d) {
      dlRow(dl, 'Author', d.author.name);
      dlRow(dl, 'Created', formatTime(d.createdAt));
      if (d.evidence) dlRow(dl, 'Evidence', d.evidence);
      if (d.value !== null && d.value !== undefined) dlRow(dl, 'Value', h('code', null, JSON.stringify(d.value)));
      dlRow(
        dl,
        'Support',
        d.justifications.length
          ? `${d.justifications.length} justification(s), ${d.justifications.filter((j) => j.holds).length} holding`
          : 'premise (no justification)',
      );
      dlRow(dl, 'Dependents', String(d.dependents.totalCount));
      if (d.retractedAt) dlRow(dl, 'Retracted', formatTime(d.retractedAt));
      if (d.retraction) {
        const rid = d.retraction.id;
        dlRow(
          dl,
          'Retraction',
          h(
            'span',
            null,
            `“${d.retraction.reason}” `,
            canReadReceipts()
              ? h(
                  'button',
                  { type: 'button', className: 'link', onclick: () => ask('openReceipt', rid) },
                  'Show receipt',
                )
              : null,
          ),
        );
      }
    }
    parts.push(dl);
    if (page.graph && page.graph.rootId !== node.id) {
      parts.push(
        h(
          'button',
          { type: 'button', 'data-testid': 'recenter', onclick: () => ask('openGraph', node.id) },
          'Centre graph on this belief',
        ),
      );
    }
  } else if (node.kind === 'effect') {
    parts.push(h('h3', null, `Effect: ${node.effectKind}`));
    dlRow(dl, 'Status', statusBadge(node.status));
    dlRow(dl, 'Amount', node.amount ? formatMoney(node.amount) : 'none');
    if (node.idempotencyKey) dlRow(dl, 'Idempotency key', h('code', null, breakable(node.idempotencyKey)));
    parts.push(dl);
  } else {
    parts.push(h('h3', null, 'Reversal'));
    dlRow(dl, 'Status', statusBadge(node.status));
    dlRow(dl, 'Amount', node.amount ? formatMoney(node.amount) : 'none');
    if (node.idempotencyKey) dlRow(dl, 'Idempotency key', h('code', null, breakable(node.idempotencyKey)));
    parts.push(dl, h('p', { className: 'muted small' }, 'Owed until a provider confirms it with its own reference.'));
  }
  el.detail.replaceChildren(...parts.filter((p): p is Node => p !== null));
  el.detail.dataset.id = node.id;
  el.detail.dataset.kind = node.kind;

  const isBelief = node.kind === 'belief';
  el.actions.hidden = !isBelief;
  if (!isBelief) return;
  const retracted = node.status === 'RETRACTED';
  el.previewButton.disabled = retracted;
  el.previewButton.title = retracted ? 'Already retracted' : '';
  el.retractForm.hidden = !canRetract();
  el.retractButton.disabled = retracted;
  if (retracted && !el.retractNote.textContent) el.retractNote.textContent = ALREADY_RETRACTED;
  else if (!retracted && el.retractNote.textContent === ALREADY_RETRACTED) el.retractNote.textContent = ''; // reinstated since
}

const ALREADY_RETRACTED = 'This belief is already retracted.';
