/**
 * A publish directory over HTTP on 127.0.0.1, for the preview shot: the site
 * is not yet served at its own address, and file:// would break its
 * absolute paths (/style.css). Files only, read-only, nothing outside the
 * directory (a symlink the build left pointing out is refused: the picture
 * is public).
 */
import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { extname, join, sep } from 'node:path';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.otf': 'font/otf',
  '.txt': 'text/plain; charset=utf-8',
  '.xml': 'application/xml',
  '.wasm': 'application/wasm',
};

export interface ServedDirectory {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  close(): Promise<void>;
}

export async function serveDirectory(dir: string): Promise<ServedDirectory> {
  const root = await realpath(dir);
  /** The file a URL path names (a directory's index.html), or undefined. */
  const resolveFile = async (urlPath: string): Promise<string | undefined> => {
    let decoded: string;
    try {
      decoded = decodeURIComponent(urlPath);
    } catch {
      return undefined;
    }
    if (decoded.includes('\0') || decoded.split('/').includes('..')) return undefined;
    let path: string;
    try {
      path = await realpath(join(root, decoded));
    } catch {
      return undefined;
    }
    if (path !== root && !path.startsWith(root + sep)) return undefined;
    const found = await stat(path).catch(() => undefined);
    if (found?.isFile()) return path;
    if (found?.isDirectory()) return resolveFile(join(decoded, 'index.html'));
    return undefined;
  };
  const server = createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405).end();
    const urlPath = (req.url ?? '/').split(/[?#]/)[0]!;
    resolveFile(urlPath).then(
      (file) => {
        if (!file) return void res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        res.writeHead(200, { 'content-type': TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream' });
        if (req.method === 'HEAD') return void res.end();
        createReadStream(file)
          .on('error', () => res.destroy())
          .pipe(res);
      },
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
