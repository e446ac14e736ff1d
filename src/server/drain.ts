import type http from 'node:http';
import { sleep } from '../kernel/sleep';

/**
 * A server's stop as its routes see it. From `start()` on, /health and /ready answer 503 and new
 * GraphQL work (HTTP and WebSocket) is refused, while the server still listens so probes see it
 * draining; the requests in flight (probes aside) are counted, so the stop can wait for them.
 */
export class Drain {
  #draining = false;
  #inFlight = 0;

  get draining(): boolean {
    return this.#draining;
  }

  /** Counts `res` as in flight until it closes. */
  track(res: http.ServerResponse): void {
    this.#inFlight++;
    res.once('close', () => this.#inFlight--);
  }

  start(): void {
    this.#draining = true;
  }

  /** Resolves once no counted request is in flight, or at `deadline` (epoch ms), whichever comes first. */
  async settled(deadline: number): Promise<void> {
    while (this.#inFlight > 0 && Date.now() < deadline) await sleep(20);
  }
}
