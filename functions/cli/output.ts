/**
 * What the command line prints, and how it fails. A command either prints
 * for people (lines and tables on stdout) or, with `--json`, exactly one
 * JSON value on stdout for scripts; either way an error is one line on
 * stderr and a non-zero exit status (CliError's `exitCode`).
 */
import { isNativeError } from 'node:util/types';

/** Exit statuses, the same for every command (docs/cli.md lists them). */
export const EXIT = {
  ok: 0,
  error: 1,
  usage: 2,
  deployFailed: 3,
  deployCancelled: 4,
  interrupted: 130,
} as const;

/** A failure the user can act on: its message is the one line printed. */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: number = EXIT.error,
  ) {
    super(message);
  }
}

/** The message of anything thrown, as one line. */
export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

/** Why a low-level call failed, for a message: fetch hides the network error in `cause`. */
export function reasonOf(err: unknown): string {
  // isNativeError, not instanceof: fetch's errors may come from another realm than this module's Error (a vm context).
  if (!isNativeError(err)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  if (err.name === 'TimeoutError') return 'no answer in time';
  if (isNativeError(cause)) {
    const code = (cause as NodeJS.ErrnoException).code;
    return code ? `${code} (${cause.message})` : cause.message;
  }
  return err.message;
}

export interface Streams {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  /** What the command reads (`--api-key-stdin`, a confirmation); the process's own when not given. */
  stdin?: NodeJS.ReadStream | (NodeJS.ReadableStream & { isTTY?: undefined });
}

export class Output {
  constructor(
    readonly json: boolean,
    readonly streams: Streams = { stdout: process.stdout, stderr: process.stderr },
  ) {}

  /** A command's result: `value` as JSON with --json, else the lines `human` makes. */
  result(value: unknown, human: () => string | string[]): void {
    if (this.json) {
      this.streams.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
      return;
    }
    const text = human();
    const lines = Array.isArray(text) ? text : [text];
    if (lines.length) this.streams.stdout.write(`${lines.join('\n')}\n`);
  }

  /** A line for people on stdout while a command runs (nothing with --json). */
  line(text: string): void {
    if (!this.json) this.streams.stdout.write(`${text}\n`);
  }

  /** A hint or warning for people, on stderr (also with --json: scripts read stdout only). */
  note(text: string): void {
    this.streams.stderr.write(`cairn: ${oneLine(text)}\n`);
  }
}

/** Rows as aligned columns, the header first; the last column is not padded. */
export function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const format = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [format(header), ...rows.map(format)];
}

/** 1536 -> "1.5 KiB". */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return '?';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** Milliseconds as "12.3 s" or "2 min 5 s". */
export function formatDuration(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** An ISO instant as "2024-05-01 12:00:03" (UTC), or "-" for none. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '-';
  return iso.replace('T', ' ').replace(/\.\d+Z$/, '');
}
