/**
 * The web app's build: esbuild bundles functions/web-app/ui/main.tsx (React,
 * the GraphQL client, the styles) into content-hashed files, and an
 * index.html names them. The local server builds in memory on the first
 * request (serve.ts); the CDK stack calls buildWebApp() at synth and copies
 * the files into the GraphQL function's bundle, where serve.ts reads them.
 *
 * Only the local server and the stack load this file (esbuild is a
 * development dependency): serve.ts imports it by a computed name, so the
 * Lambda bundle leaves it out.
 */
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, buildSync, type BuildOptions, type OutputFile } from 'esbuild';
import { ASSET_PATH } from './bundle.js';

const UI_DIR = join(dirname(fileURLToPath(import.meta.url)), 'ui');

export { WEB_APP_BUNDLE_DIR } from './bundle.js';

const OPTIONS: BuildOptions = {
  entryPoints: { app: join(UI_DIR, 'main.tsx') },
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'browser',
  // Browsers of the last few years: optional chaining, top-level await not needed.
  target: ['chrome105', 'firefox110', 'safari16'],
  jsx: 'automatic',
  define: { 'process.env.NODE_ENV': '"production"' },
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  outdir: '/out',
  write: false,
  legalComments: 'eof',
  logLevel: 'silent',
};

/** A small mark (a stack of stones) as the tab's icon, inline so it costs no request. */
const ICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E%3Cellipse cx='16' cy='26' rx='12' ry='4.5' fill='%230b5cad'/%3E%3Cellipse cx='16' cy='17.5' rx='9' ry='4' fill='%233b82c4'/%3E%3Cellipse cx='16' cy='9.5' rx='6' ry='3.5' fill='%2393c0ea'/%3E%3C/svg%3E";

export function indexHtml(script: string, stylesheet: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<title>Cairn</title>
<link rel="icon" href="${ICON}">
<link rel="stylesheet" href="${ASSET_PATH}${stylesheet}">
<script type="module" src="${ASSET_PATH}${script}"></script>
</head>
<body>
<div id="root"><p class="boot">Loading Cairn…</p></div>
<noscript><p class="boot">Cairn's web app needs JavaScript. The GraphQL API is at <a href="/graphql">/graphql</a>.</p></noscript>
</body>
</html>
`;
}

/** The built files by name (`index.html`, `app-<hash>.js`, `app-<hash>.css`). */
function filesOf(outputs: OutputFile[]): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  for (const out of outputs) files.set(out.path.slice(out.path.lastIndexOf('/') + 1), out.contents);
  const names = [...files.keys()];
  const script = names.find((n) => n.endsWith('.js'));
  const stylesheet = names.find((n) => n.endsWith('.css'));
  if (!script || !stylesheet) throw new Error(`the web app's build made ${names.join(', ')}: a script and a stylesheet were expected`);
  files.set('index.html', new TextEncoder().encode(indexHtml(script, stylesheet)));
  return files;
}

/** Builds the app in memory (the local server, on its first request for it). */
export async function buildWebAppFiles(): Promise<Map<string, Uint8Array>> {
  return filesOf((await build(OPTIONS)).outputFiles ?? []);
}

/**
 * Builds the app into `outDir` and returns the names of the files written:
 * for the CDK stack at synth, which copies them into the GraphQL function's
 * bundle under WEB_APP_BUNDLE_DIR. Synchronous, so a construct can call it.
 * Each file is replaced whole (written aside, then renamed), and files of
 * earlier builds are removed, so two synths at once (parallel test
 * workers) never copy a half-written file.
 */
export function buildWebApp(outDir: string): string[] {
  const files = filesOf(buildSync(OPTIONS).outputFiles ?? []);
  mkdirSync(outDir, { recursive: true });
  for (const [name, body] of files) {
    const aside = join(outDir, `.${name}.${process.pid}.tmp`);
    writeFileSync(aside, body);
    renameSync(aside, join(outDir, name));
  }
  for (const name of readdirSync(outDir)) if (!files.has(name) && !name.startsWith('.')) rmSync(join(outDir, name), { force: true });
  return [...files.keys()].sort();
}
