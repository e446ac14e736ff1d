import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect } from 'vitest';
import type { Step } from './usage';

interface Answer {
  isError: boolean;
  texts: string[];
  structured: Record<string, unknown> | undefined;
}

async function ask(client: Client, step: Step): Promise<Answer> {
  const r = await client.callTool({ name: step.tool, arguments: step.args });
  return {
    isError: !!r.isError,
    texts: (r.content as Array<{ type: string; text: string }>).map((c) => c.text),
    structured: r.structuredContent as Record<string, unknown> | undefined,
  };
}

/**
 * Runs the same steps on the reference and on RETRACT and holds RETRACT to the reference's answer:
 * the same error or success; the reference's structured fields, each equal to the reference's value
 * (RETRACT may only add fields beside them); and the reference's text as the first content item.
 * An error must carry the reference's message inside RETRACT's (which adds the code and the field).
 */
export async function compareUsage(
  reference: Client,
  retract: Client,
  steps: readonly Step[],
): Promise<Array<{ step: Step; ours: Answer }>> {
  const out = [];
  for (const [i, step] of steps.entries()) {
    const ref = await ask(reference, step);
    const ours = await ask(retract, step);
    const at = `step ${i} (${step.tool} ${JSON.stringify(step.args).slice(0, 120)})`;
    expect(ours.isError, `${at}: ${ours.texts.join(' | ')}`).toBe(ref.isError);
    if (ref.isError) {
      expect(ours.texts[0], at).toContain(ref.texts[0]!.replace(/^MCP error -?\d+: /, ''));
    } else {
      const picked = Object.fromEntries(Object.keys(ref.structured ?? {}).map((k) => [k, ours.structured?.[k]]));
      expect(picked, at).toEqual(ref.structured);
      expect(ours.texts[0], at).toBe(ref.texts[0]);
    }
    out.push({ step, ours });
  }
  return out;
}

/** The reference's tool list is RETRACT's, input and output properties included (RETRACT may add optional ones). */
export async function compareTools(reference: Client, retract: Client): Promise<void> {
  const ref = (await reference.listTools()).tools;
  const ours = new Map((await retract.listTools()).tools.map((t) => [t.name, t]));
  expect(ref.map((t) => t.name).sort()).toHaveLength(9);
  for (const t of ref) {
    const o = ours.get(t.name);
    expect(o, t.name).toBeDefined();
    expect(o!.inputSchema.required ?? [], t.name).toEqual(t.inputSchema.required ?? []);
    expect(only(o!.inputSchema, t.inputSchema), `${t.name} input`).toEqual(t.inputSchema);
    expect(only(o!.outputSchema, t.outputSchema), `${t.name} output`).toEqual(t.outputSchema);
    expect(o!.annotations, t.name).toEqual(t.annotations);
  }
}

/** `ours` cut down to what `ref` has, at every depth: RETRACT's added optional properties are left out, everything else must match. */
function only(ours: unknown, ref: unknown): unknown {
  // A list of names (`required`): RETRACT's output requires its added fields too.
  if (Array.isArray(ref) && Array.isArray(ours) && ref.every((x) => typeof x === 'string'))
    return ours.filter((x) => ref.includes(x));
  if (Array.isArray(ref) && Array.isArray(ours)) return ours.map((x, i) => only(x, ref[i]));
  if (!ref || typeof ref !== 'object' || !ours || typeof ours !== 'object') return ours;
  return Object.fromEntries(
    Object.keys(ref).map((k) => [k, only((ours as Record<string, unknown>)[k], (ref as Record<string, unknown>)[k])]),
  );
}
