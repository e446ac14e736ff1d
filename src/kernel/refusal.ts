/**
 * A write that refuses after it has written (a turn whose premise fell, a proposal whose support fell): thrown inside
 * the transaction so that it rolls back, and turned into the caller's answer by `answerRefusal` outside it.
 */
export class Refusal<T> {
  constructor(readonly result: T) {}
}

/** Runs `write` (a transaction), answering a Refusal it threw with the refusal's result: nothing of it stays written. */
export async function answerRefusal<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (e) {
    if (e instanceof Refusal) return e.result as T;
    throw e;
  }
}
