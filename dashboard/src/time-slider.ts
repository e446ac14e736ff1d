// The time slider: redraws the graph's beliefs as they stood at a past instant (beliefs(ids:, asOf:), one request
// for the whole graph). A belief not yet asserted then is drawn faded ("not yet"); effects and reversals keep their
// current status (their history is not kept). Back at "now", the current statuses are read again.
import { gql } from './api';
import { byId, formatTime } from './dom';
import { historyInstants } from './history-panel';
import { announce, showError } from './notices';
import { BELIEFS_AS_OF } from './operations';
import { page } from './page-state';

/** A node's status on the graph while the slider shows an instant before the belief was asserted. */
const NOT_YET = 'NOT_YET';
const input = () => byId<HTMLInputElement>('as-of');
const label = () => byId('as-of-label');
const marks = () => byId('as-of-marks');

let timer: ReturnType<typeof setTimeout> | null = null;
let seq = 0;

/** Wires the slider's controls once. */
export function initTimeSlider(): void {
  input().addEventListener('input', () => {
    showLabel();
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => void redraw(), 150);
  });
  byId<HTMLButtonElement>('as-of-now').addEventListener('click', () => {
    input().value = input().max;
    showLabel();
    void redraw();
  });
}

/** The instant the slider shows, or null at its right end (now). */
function sliderInstant(): Date | null {
  const i = input();
  return i.value === i.max ? null : new Date(Number(i.value));
}

function showLabel(): void {
  const t = sliderInstant();
  label().textContent = t ? formatTime(t.toISOString()) : 'now';
  label().dataset.asOf = t ? t.toISOString() : '';
}

/** After a graph load: the range runs from the oldest belief drawn to now, with the retractions marked on it. */
export function onGraphLoaded(createdAt: readonly string[]): void {
  const i = input();
  const oldest = Math.min(...createdAt.map((c) => new Date(c).getTime()));
  const now = Date.now();
  i.min = String(Number.isFinite(oldest) ? oldest - 1 : now - 1);
  i.max = String(now);
  i.step = '1';
  i.value = i.max;
  i.disabled = false;
  marks().replaceChildren(
    ...historyInstants()
      .filter((d) => d.getTime() >= Number(i.min))
      .map((d) =>
        Object.assign(document.createElement('option'), {
          value: String(d.getTime()),
          label: formatTime(d.toISOString()),
        }),
      ),
  );
  showLabel();
}

/** Reads every belief of the graph as of the slider's instant and sets its status on the graph. */
async function redraw(): Promise<void> {
  const g = page.graph;
  if (!g) return;
  const mine = ++seq;
  const at = sliderInstant();
  const ids = [...g.nodes.values()].filter((n) => n.kind === 'belief').map((n) => n.id);
  try {
    const data = await gql(BELIEFS_AS_OF, { ids, asOf: at?.toISOString() ?? null, first: Math.max(1, ids.length) });
    if (mine !== seq) return;
    const then = new Map(data.beliefs.edges.map((e) => [e.node.id, e.node.status] as const));
    for (const id of ids) g.setStatus(id, then.get(id) ?? NOT_YET);
    byId('graph').dataset.asOf = at ? at.toISOString() : '';
    announce(at ? `Graph as of ${formatTime(at.toISOString())}.` : 'Graph as it is now.');
  } catch (err) {
    showError(err);
  }
}
