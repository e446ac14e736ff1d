// A LangGraph graph whose node writes and reads long-term memory through whatever store it is compiled with.
// docs/langgraph.md shows this file; test/client/langgraph/graph.test.ts runs it on InMemoryStore and RetractStore.
import { Annotation, END, START, StateGraph, getStore, type LangGraphRunnableConfig } from '@langchain/langgraph';
import type { BaseStore } from '@langchain/langgraph-checkpoint';
// In an agent project: from the client package's langgraph entry.
import { DERIVED_FROM } from '../../src/client/langgraph/index.js';

const Turn = Annotation.Root({
  customer: Annotation<string>,
  /** A fact the agent learned this turn, if any. */
  learned: Annotation<{ key: string; text: string; verified: boolean } | null>,
  /** The answer: what the agent remembers about the customer, and whether it may refund at once. */
  remembered: Annotation<string[]>,
  instantRefund: Annotation<boolean>,
});

/** Writes what was learned, then concludes from memory; the conclusion names the fact it rests on. */
async function remember(state: typeof Turn.State, config: LangGraphRunnableConfig) {
  const store = config.store!;
  const facts = ['customers', state.customer, 'facts'];
  if (state.learned)
    await store.put(facts, state.learned.key, { text: state.learned.text, verified: state.learned.verified });
  const verified = await store.search(facts, { filter: { verified: true } });
  if (verified.some((item) => item.key === 'passport')) {
    await store.put(['customers', state.customer, 'conclusions'], 'instant-refund', {
      text: 'eligible for an instant refund',
      [DERIVED_FROM]: [{ namespace: facts, key: 'passport' }],
    });
  }
  return {};
}

/** Reads memory back (getStore() is the same store as config.store). */
async function answer(state: typeof Turn.State) {
  const store = getStore()!;
  const items = await store.search(['customers', state.customer], { limit: 100 });
  const refund = await store.get(['customers', state.customer, 'conclusions'], 'instant-refund');
  return { remembered: items.map((item) => String(item.value.text)).sort(), instantRefund: refund !== null };
}

export function memoryGraph(store: BaseStore) {
  return new StateGraph(Turn)
    .addNode('remember', remember)
    .addNode('answer', answer)
    .addEdge(START, 'remember')
    .addEdge('remember', 'answer')
    .addEdge('answer', END)
    .compile({ store });
}

/** Three turns about one customer, then the passport turns out forged: what does the agent answer after? */
export async function story(store: BaseStore) {
  const graph = memoryGraph(store);
  const turn = (learned: (typeof Turn.State)['learned']) => graph.invoke({ customer: 'c-4411', learned });
  const first = await turn({ key: 'passport', text: 'passport checked and authentic', verified: true });
  const second = await turn({ key: 'address', text: 'lives in Lisbon', verified: false });
  // The passport was forged: the memory it was is deleted.
  await store.delete(['customers', 'c-4411', 'facts'], 'passport');
  const after = await turn(null);
  return { first, second, after };
}
