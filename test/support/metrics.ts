import { execFileSync } from 'node:child_process';
import type { Actor, Core } from '../../src/core';
import { gid } from '../../src/kernel/ids';
import { passportStory } from './story';

/** One sample of a Prometheus text exposition: `name{a="x",b="y"}` → value. */
export function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^(\S+?(?:\{.*\})?) (\S+)$/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

/** GET /metrics, with the scrape token when given. */
export async function scrape(
  base: string,
  token?: string,
): Promise<{ status: number; text: string; type: string | null }> {
  const r = await fetch(`${base}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: r.status, text: await r.text(), type: r.headers.get('content-type') };
}

/** The passport story (owed $1,240.00 refund, unreachable $89.00 card charge), its passport retracted over GraphQL as `RetractPassport`. */
export async function passportRetractedOverApi(
  base: string,
  core: Core,
  actor: Actor & { token: string },
): Promise<void> {
  const s = await passportStory(core, actor);
  const r = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${actor.token}` },
    body: JSON.stringify({
      operationName: 'RetractPassport',
      query:
        'mutation RetractPassport($b: ID!) { retractBelief(input: { beliefId: $b, reason: "passport came back forged" }) { id } }',
      variables: { b: gid('Belief', s.passport.id) },
    }),
  });
  const body = (await r.json()) as { errors?: unknown };
  if (body.errors) throw new Error(`retractBelief failed: ${JSON.stringify(body.errors)}`);
}

/** Whether a command is on PATH (Debian's prometheus and promtool: the tests that need them skip without). */
export function onPath(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
