import { GRAPHIQL_ASSETS, serveGraphiqlAsset } from '../graphiql';
import type { Route } from '../route';

/** GraphiQL's scripts, styles and workers under /graphiql/, when GraphiQL is on (the page itself is Yoga's, at /graphql). */
export const graphiqlAssetsRoute: Route = {
  matches: (pathname) => pathname.startsWith(GRAPHIQL_ASSETS),
  handle: (req, res, url) => serveGraphiqlAsset(url.pathname, req, res),
};
