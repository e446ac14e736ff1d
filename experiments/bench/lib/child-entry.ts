import { pathToFileURL } from 'node:url';
import { measurer, type Measure } from './child';

/** The child side of inChild(): imports the worker, runs it once, sends back its output and measurements, exits. */
process.once('message', async (m: { workerPath: string; input: unknown }) => {
  try {
    const mod = (await import(pathToFileURL(m.workerPath).href)) as {
      work(input: unknown, measure: Measure): Promise<unknown>;
    };
    const { measure, measurements } = measurer();
    const output = await mod.work(m.input, measure);
    process.send!({ ok: true, result: { output, measurements } }, () => process.exit(0));
  } catch (e) {
    const err = e as Error;
    process.send!({ ok: false, error: `${err?.message ?? String(e)}\n${err?.stack ?? ''}` }, () => process.exit(1));
  }
});
