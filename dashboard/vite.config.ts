import { fileURLToPath } from 'node:url';
import { defineConfig, type ProxyOptions } from 'vite';

// The API server serves dashboard/dist at /dashboard/. For `vite dev` / `vite preview` against a running
// server, set RETRACT_API (e.g. http://localhost:4000) and /graphql (HTTP + WebSocket) is proxied there.
const api = process.env.RETRACT_API;
const proxy: Record<string, ProxyOptions> | undefined = api
  ? { '/graphql': { target: api, changeOrigin: true, ws: true } }
  : undefined;

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/dashboard/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: true,
    // cytoscape alone is ~400 kB minified; it is the one dependency this page needs.
    chunkSizeWarningLimit: 700,
  },
  server: { proxy },
  preview: { proxy },
});
