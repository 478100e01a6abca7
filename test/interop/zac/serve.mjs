/**
 * A small static server for the admin console bundle, as a single-page app on loopback:
 * - a path naming an existing file is answered with that file;
 * - a path under a deep link (`/identities/abc/styles.css`) is answered with the file that a suffix of the
 *   path names (`styles.css`), because the bundle refers to its assets relatively;
 * - anything else is answered with index.html, so the app's router takes over.
 * Every answer allows any origin: the console's OIDC login follows the controller's redirect to
 * `<this origin>/auth/callback` with fetch, and after a cross-origin redirect that request's origin is `null`.
 */
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';

const types = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.gif': 'image/gif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.eot': 'application/vnd.ms-fontobject',
};

async function isFile(path) {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** The file to answer `urlPath` with: the longest suffix of the path that names a file under `root`, else index.html. */
async function resolveFile(root, urlPath) {
  const segments = decodeURIComponent(urlPath).split('/').filter((s) => s && s !== '.' && s !== '..');
  for (let i = 0; i < segments.length; i++) {
    const candidate = normalize(join(root, ...segments.slice(i)));
    if (candidate.startsWith(root + sep) && (await isFile(candidate))) return candidate;
  }
  return join(root, 'index.html');
}

/** Serves `root` on 127.0.0.1 at a free port; resolves to `{ url, close }`. */
export async function serveSpa(root) {
  root = normalize(root);
  const server = createServer(async (req, res) => {
    try {
      const file = await resolveFile(root, new URL(req.url ?? '/', 'http://x').pathname);
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store', 'access-control-allow-origin': '*' });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch (err) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(err));
    }
  });
  await new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', ok);
  });
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((ok) => { server.closeAllConnections(); server.close(() => ok()); }),
  };
}
