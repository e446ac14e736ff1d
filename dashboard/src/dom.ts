type Child = Node | string | number | null | undefined | false;
type AttrValue = string | number | boolean | null | undefined;
type Attrs = Record<string, AttrValue | ((ev: Event) => void)>;

/** Tiny element builder. `on*` keys become listeners; `true` sets an empty attribute; null/false/undefined skip. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs | null = null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (typeof value === 'function') {
        el.addEventListener(key.slice(2).toLowerCase(), value);
      } else if (value === true) {
        el.setAttribute(key, '');
      } else if (value !== false && value !== null && value !== undefined) {
        el.setAttribute(key === 'className' ? 'class' : key, String(value));
      }
    }
  }
  append(el, ...children);
  return el;
}

function append(parent: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} missing from index.html`);
  return el as T;
}

export function clear(el: Element): void {
  el.replaceChildren();
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString('en-US', { hour12: false });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * An identifier (claim key, idempotency key) as text with line-break opportunities after `/` and `:`, so a long key
 * wraps at its separators instead of mid-word. The text content is unchanged (`<wbr>` adds no characters).
 */
export function breakable(text: string): DocumentFragment {
  const frag = document.createDocumentFragment();
  for (const part of text.split(/(?<=[/:])/)) {
    if (frag.childNodes.length) frag.appendChild(document.createElement('wbr'));
    frag.appendChild(document.createTextNode(part));
  }
  return frag;
}
