import fs from 'node:fs';
import path from 'node:path';
import { DASHBOARD_HEADERS, notFound } from '../edge';
import type { Route } from '../route';
import { sendJson } from '../send-json';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.ico': 'image/x-icon',
  '.map': 'application/json',
};

/**
 * The built dashboard under /dashboard/ (from `dir`), each file with the dashboard's strict headers;
 * index.html is revalidated on every load, the hashed assets cached for an hour. Nothing outside
 * `dir` is served, whatever the path says.
 */
export function dashboardRoute(dir: string): Route {
  const root = path.resolve(dir);
  return {
    matches: (pathname) => pathname === '/dashboard' || pathname.startsWith('/dashboard/'),
    handle(_req, res, url) {
      let rel = url.pathname.replace(/^\/dashboard\/?/, '');
      if (rel === '') rel = 'index.html';
      const file = path.resolve(root, rel);
      if (!file.startsWith(root + path.sep)) return sendJson(res, 404, notFound());
      fs.readFile(file, (err, data) => {
        if (err) {
          if (rel === 'index.html')
            return sendJson(res, 404, notFound('the dashboard is not built: run npm run build'));
          return sendJson(res, 404, notFound());
        }
        res.writeHead(200, {
          ...DASHBOARD_HEADERS,
          'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
          'cache-control': rel === 'index.html' ? 'no-cache' : 'max-age=3600',
        });
        res.end(data);
      });
    },
  };
}
