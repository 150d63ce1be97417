/**
 * Stack traces in the sources' files and lines for a bundled Lambda
 * function, without the start-up cost of `--enable-source-maps`: that flag
 * makes Node read and parse the source map of every module as it loads
 * (7-11 MB of JSON per function before issue 31, about 100 ms of each cold
 * start), whether or not a stack trace is ever printed. Here a map is read
 * only when a stack trace is first formatted (V8 calls
 * Error.prepareStackTrace on the first read of an error's `stack`:
 * https://v8.dev/docs/stack-trace-api), once per file and container.
 *
 * Each frame in a file of the bundle (index.mjs and its chunks, which
 * esbuild writes with a `.map` beside them: lib/functions.ts) is printed as
 * `at <name> (<source>:<line>:<column>)` with the source position, the
 * bundle's own position when the map has none. Frames elsewhere (Node's
 * own, a package copied beside the bundle) keep V8's text.
 */
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

/** One file's map: undefined until asked for, null when it has none. */
const maps = new Map<string, SourceMap | null>();

function mapOf(file: string): SourceMap | null {
  let map = maps.get(file);
  if (map === undefined) {
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')));
    } catch {
      map = null;
    }
    maps.set(file, map);
  }
  return map;
}

const filePathOf = (name: string | undefined | null): string | undefined => {
  if (!name) return undefined;
  if (name.startsWith('file://')) return fileURLToPath(name);
  return name.startsWith('/') ? name : undefined;
};

type Entry = Partial<{ originalSource: string; originalLine: number; originalColumn: number; name: string }>;

/** The map's entry for a frame's position, when the frame is in the bundle. */
function entryOf(frame: NodeJS.CallSite | undefined, bundleFiles: (file: string) => boolean): Entry | undefined {
  const file = filePathOf(frame?.getFileName());
  const line = frame?.getLineNumber();
  const column = frame?.getColumnNumber();
  if (!file || !bundleFiles(file) || line == null || column == null) return undefined;
  // findEntry takes and gives zero-based lines and columns; V8's are one-based.
  const entry = mapOf(file)?.findEntry(line - 1, column - 1) as Entry | undefined;
  return entry?.originalSource === undefined ? undefined : entry;
}

/**
 * The frame in the sources' terms, or undefined to keep V8's own text. The
 * function's name is the minifier's; its own name is what the map says was
 * called where its caller (the next frame) called it, as Node does it.
 */
export function mappedFrame(
  frame: NodeJS.CallSite,
  caller: NodeJS.CallSite | undefined,
  bundleFiles: (file: string) => boolean,
): string | undefined {
  const entry = entryOf(frame, bundleFiles);
  if (!entry || entry.originalLine === undefined || entry.originalColumn === undefined) return undefined;
  const source = entry.originalSource!.startsWith('file://') ? fileURLToPath(entry.originalSource!) : entry.originalSource!;
  const name = entryOf(caller, bundleFiles)?.name ?? frame.getFunctionName() ?? frame.getMethodName();
  const where = `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  const async = frame.isAsync?.() ? 'async ' : '';
  return `${async}${name ? `${name} (${where})` : where}`;
}

/**
 * Installs the formatter for the bundle in `dir`: the function's code, which
 * Lambda names in LAMBDA_TASK_ROOT
 * (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime).
 * Does nothing outside Lambda (no such variable: the local server and the
 * tests run the sources) or when Node maps stacks itself
 * (--enable-source-maps given). It replaces the default formatter, which
 * Node 24 exposes as Error.prepareStackTrace; frames outside the bundle are
 * printed as V8 prints them.
 */
export function sourceMappedStacks(dir: string | undefined = process.env.LAMBDA_TASK_ROOT): void {
  if (!dir || process.sourceMapsEnabled) return;
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  const bundleFiles = (file: string) => file.startsWith(prefix) && file.endsWith('.mjs') && !file.includes('/node_modules/');
  Error.prepareStackTrace = (error: Error, frames: NodeJS.CallSite[]) => {
    let head: string;
    try {
      head = Error.prototype.toString.call(error);
    } catch {
      head = '<error>';
    }
    const lines = frames.map((frame, i) => {
      let text: string | undefined;
      try {
        text = mappedFrame(frame, frames[i + 1], bundleFiles);
      } catch {
        text = undefined;
      }
      return `    at ${text ?? String(frame)}`;
    });
    return [head, ...lines].join('\n');
  };
}
