import { encodeGlobalID } from '@pothos/plugin-relay';
import { count } from '../kernel/count';
import { formatMoney } from '../mcp/format';
import { CliError } from './common';

/**
 * `retract reinstate <retraction>`: calls reinstateRetraction on a running server (GraphQL over
 * HTTP, the token in RETRACT_TOKEN) and prints the reinstatement receipt: what came back and the
 * money named. A refusal prints its code and message and exits 1 (2 for bad usage).
 */
const MUTATION = /* GraphQL */ `
  mutation ($id: ID!, $reason: String!) {
    reinstateRetraction(input: { retractionId: $id, reason: $reason }) {
      __typename
      ... on ReinstatementBlocked {
        contradiction {
          id
        }
        reinstatement {
          id
        }
      }
      ... on RetractionReinstated {
        reinstatement {
          id
          status
          moneyLines {
            line
            priorStatus
            amount {
              amountMinorExact
              currency
            }
            reexecutionKey
          }
          totals {
            beliefsReinstated
            contradictionsRaised
            effectsRestorable
            voided {
              amountMinorExact
              currency
            }
            inFlight {
              amountMinorExact
              currency
            }
            reexecutionOwed {
              amountMinorExact
              currency
            }
          }
        }
      }
    }
  }
`;

interface Money {
  amountMinorExact: string;
  currency: string;
}

export async function reinstate(
  retraction: string,
  opts: { reason: string; url?: string; json?: boolean },
): Promise<number> {
  const token = process.env.RETRACT_TOKEN;
  if (!token)
    throw new CliError(
      'RETRACT_TOKEN must hold a token with beliefs:retract (and receipts:read to print the receipt later)',
      2,
    );
  const url = opts.url ?? process.env.RETRACT_URL ?? 'http://127.0.0.1:4000/graphql';
  const id = /^[0-9]+$/.test(retraction) ? encodeGlobalID('Retraction', retraction) : retraction;
  let body: { data?: any; errors?: Array<{ message: string; extensions?: { code?: string } }> };
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query: MUTATION, variables: { id, reason: opts.reason } }),
    });
    body = (await res.json()) as typeof body;
  } catch (e) {
    throw new CliError(`cannot reach ${url}: ${(e as Error).message}`);
  }
  if (body.errors?.length) {
    const e = body.errors[0]!;
    throw new CliError(
      `${e.extensions?.code ?? 'ERROR'}: ${e.message}`,
      e.extensions?.code === 'BAD_USER_INPUT' ? 2 : 1,
    );
  }
  const r = body.data.reinstateRetraction;
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(r)}\n`);
    return 0;
  }
  if (r.__typename === 'ReinstatementBlocked') {
    process.stdout.write(
      `reinstatement ${r.reinstatement.id} BLOCKED: the root's claim holds another ACTIVE belief; contradiction ${r.contradiction.id} decides ` +
        '(ACCEPT_PROPOSED brings the root back and completes the reinstatement)\n',
    );
    return 0;
  }
  const ri = r.reinstatement;
  const t = ri.totals;
  const sum = (xs: Money[]) =>
    xs.length ? xs.map((m) => formatMoney(m.amountMinorExact, m.currency)).join(' + ') : '0';
  const lines = [
    `reinstatement ${ri.id} ${ri.status}: ${count(t.beliefsReinstated, 'belief')} reinstated, ${count(t.contradictionsRaised, 'contradiction')} raised, ${count(t.effectsRestorable, 'effect')} restorable`,
    ...ri.moneyLines.map(
      (l: { line: string; priorStatus: string; amount: Money | null; reexecutionKey: string | null }) =>
        `  ${l.line.padEnd(16)} was ${l.priorStatus.padEnd(11)} ${l.amount ? sum([l.amount]) : 'no amount'}${l.reexecutionKey ? `  key ${l.reexecutionKey}` : ''}`,
    ),
    `voided ${sum(t.voided)} / in flight ${sum(t.inFlight)} / re-execution owed ${sum(t.reexecutionOwed)}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}
