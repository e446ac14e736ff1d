import { createHash } from 'node:crypto';
import type http from 'node:http';
import { promisify } from 'node:util';
import { gzip as gzipCb } from 'node:zlib';
import type { GraphiQLOptions } from 'graphql-yoga';

/**
 * GraphiQL served by the server itself, so it works offline and behind a firewall. Yoga's own page
 * loads every asset from a CDN (and stays blank without one); its `@graphql-yoga/render-graphiql`
 * package ships the same built assets, but inlines all 9 MB of them into every page. Here the page is
 * small and names the assets under /graphiql/, each served once per browser (ETag, gzip when asked).
 */

/** Path prefix of GraphiQL's assets. */
export const GRAPHIQL_ASSETS = '/graphiql/';

/** What GraphiQL opens with: a headers editor waiting for a token, and a first query that shows whose it is. */
export const GRAPHIQL_OPTIONS: GraphiQLOptions = {
  title: 'RETRACT GraphiQL',
  headers: JSON.stringify({ Authorization: 'Bearer ' }, null, 2),
  defaultHeaders: JSON.stringify({ Authorization: 'Bearer ' }, null, 2),
  // A token pasted into the headers editor stays in the tab, not in the browser's storage.
  shouldPersistHeaders: false,
  defaultEditorToolsVisibility: 'headers',
  defaultQuery:
    '# Paste your token after "Bearer " in Headers below, then run (Ctrl-Enter).\n{\n  viewer {\n    id\n    name\n    fleet\n    scopes\n  }\n}\n',
};

/** Monaco's workers by label, as the page asks for them. */
const WORKERS = {
  editorWorkerService: 'editor.worker.js',
  json: 'json.worker.js',
  graphql: 'graphql.worker.js',
} as const;

/** The page at GET /graphql (Accept: text/html). Asset URLs are relative, so a path prefix in front of the server is kept. */
export function renderGraphiQL(opts: GraphiQLOptions): string {
  // `<` escaped: the options are inlined in a script element.
  const json = JSON.stringify(opts ?? {}).replace(/</g, '\\u003c');
  const workers = JSON.stringify(
    Object.fromEntries(Object.entries(WORKERS).map(([label, file]) => [label, `graphiql/${file}`])),
  );
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8" />
<title>${(opts?.title ?? 'GraphiQL').replace(/[<>&"]/g, '')}</title>
<link rel="icon" href="graphiql/favicon.ico" />
<link rel="stylesheet" href="graphiql/graphiql.css" />
</head>
<body id="body" class="no-focus-outline">
<noscript>You need to enable JavaScript to run GraphiQL.</noscript>
<div id="root"></div>
<script>
const workers = ${workers};
self.MonacoEnvironment = { globalAPI: false, getWorkerUrl: (_moduleId, label) => workers[label] };
</script>
<script src="graphiql/graphiql.js"></script>
<script>YogaGraphiQL.renderYogaGraphiQL(document.querySelector('#root'), ${json});</script>
</body>
</html>
`;
}

interface Asset {
  type: string;
  body: Buffer;
  etag: string;
  gzipped: Promise<Buffer>;
}

const gzip = promisify(gzipCb);
let assets: Promise<Map<string, Asset>> | null = null;

/** The built assets, read once (on the first GraphiQL request: the server starts without loading 9 MB it may never serve). */
function loadAssets(): Promise<Map<string, Asset>> {
  assets ??= import('@graphql-yoga/render-graphiql/graphiql').then((m) => {
    const entries: Array<[string, string, Buffer]> = [
      ['graphiql.js', 'text/javascript; charset=utf-8', Buffer.from(m.js)],
      ['graphiql.css', 'text/css; charset=utf-8', Buffer.from(m.css)],
      [WORKERS.editorWorkerService, 'text/javascript; charset=utf-8', Buffer.from(m.editorWorkerService)],
      [WORKERS.json, 'text/javascript; charset=utf-8', Buffer.from(m.jsonWorker)],
      [WORKERS.graphql, 'text/javascript; charset=utf-8', Buffer.from(m.graphqlWorker)],
      ['favicon.ico', 'image/x-icon', Buffer.from(m.favicon.replace(/^data:[^,]*,/, ''), 'base64')],
    ];
    return new Map(
      entries.map(([name, type, body]) => {
        let zipped: Promise<Buffer> | null = null;
        const asset: Asset = {
          type,
          body,
          etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
          // Compressed on first demand, once.
          get gzipped() {
            return (zipped ??= gzip(body));
          },
        };
        return [name, asset] as const;
      }),
    );
  });
  return assets;
}

/** Answers a GET under /graphiql/ with the asset it names, or 404. */
export async function serveGraphiqlAsset(
  pathname: string,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  const asset = (await loadAssets()).get(pathname.slice(GRAPHIQL_ASSETS.length));
  if (!asset || (req.method !== 'GET' && req.method !== 'HEAD')) {
    res.writeHead(404, { 'content-type': 'application/json' });
    return void res.end(JSON.stringify({ error: 'not found' }));
  }
  const headers: Record<string, string> = {
    'content-type': asset.type,
    etag: asset.etag,
    'cache-control': 'no-cache',
    vary: 'Accept-Encoding',
  };
  if (req.headers['if-none-match'] === asset.etag) {
    res.writeHead(304, headers);
    return void res.end();
  }
  const zipped = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const body = zipped ? await asset.gzipped : asset.body;
  res.writeHead(200, {
    ...headers,
    ...(zipped ? { 'content-encoding': 'gzip' } : {}),
    'content-length': String(body.length),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
