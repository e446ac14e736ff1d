import type http from 'node:http';

/**
 * Stops `server` listening and waits for its connections to end: keep-alive ones (a probe's) close as
 * they fall idle, and at `deadline` (epoch ms) whatever is left is cut.
 */
export function closeServer(server: http.Server, deadline: number): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    const idle = setInterval(() => server.closeIdleConnections(), 50);
    idle.unref();
    server.once('close', () => clearInterval(idle));
    setTimeout(() => server.closeAllConnections(), Math.max(0, deadline - Date.now())).unref();
  });
}
