import type { Logger } from 'pino';
import type { Core } from '../../core';
import { readBody } from '../../mcp/http';
import { callbackBody } from '../edge';
import type { Route } from '../route';
import { sendJson } from '../send-json';

/** The largest callback body read (a provider's signed JSON notice is far smaller). */
const MAX_CALLBACK_BYTES = 65_536;

/**
 * POST /providers/callback: a payment provider's signed notice that a reversal was paid
 * (src/reversal/callback.ts checks the signature and confirms it). 404 when RETRACT_PROVIDER_SECRET is unset.
 */
export function providerCallbackRoute(core: Core, secret: string | null, log: Logger): Route {
  return {
    matches: (pathname, method) => pathname === '/providers/callback' && method === 'POST',
    async handle(req, res) {
      const body = await readBody(req, MAX_CALLBACK_BYTES);
      if (!body) return sendJson(res, 413, callbackBody(413, { error: 'body too large' }));
      if (!secret)
        return sendJson(
          res,
          404,
          callbackBody(404, { error: 'provider callbacks are not configured (RETRACT_PROVIDER_SECRET)' }),
        );
      // Loaded here: its body validation brings zod, which a server without providers never needs.
      const { SIGNATURE_HEADER, handleProviderCallback } = await import('../../reversal/callback');
      const r = await handleProviderCallback({
        core,
        secret,
        rawBody: body,
        signatureHeader: req.headers[SIGNATURE_HEADER],
        logger: log,
      });
      sendJson(res, r.status, callbackBody(r.status, r.body));
    },
  };
}
