/**
 * Progress displays (cli-progress) for transfers and deploys, shown only
 * to a person at a terminal: with --json, --no-progress, or stdout or
 * stderr not a terminal, bars are left out and lines are printed as they
 * come (to stdout, and not at all with --json), so logs and CI output stay
 * plain text.
 */
import cliProgress from 'cli-progress';
import { formatBytes, type Output } from './output.js';

export type BarUnit = 'bytes' | 'steps';

export interface BarHandle {
  update(value: number, payload?: Record<string, string | number>): void;
  setTotal(total: number): void;
}

export interface Progress {
  /** Whether bars are drawn. */
  readonly live: boolean;
  /** A new bar; without a terminal, one that draws nothing. */
  bar(options: { total: number; unit: BarUnit; payload?: Record<string, string | number> }): BarHandle;
  /** A line for people, above the bars when they are drawn. */
  line(text: string): void;
  /** Draws the bars a last time and ends the display (the lines logged meanwhile come first). */
  stop(): void;
}

const FORMATS: Record<BarUnit, string> = {
  bytes: '{bar} {percentage}% | {value}/{total} | {label}',
  steps: '{bar} {label} | {duration_formatted}',
};

function formatValue(unit: BarUnit) {
  return (value: number, options: cliProgress.Options, type: string): string => {
    if (unit === 'bytes' && (type === 'value' || type === 'total')) return formatBytes(value);
    if (type === 'percentage') return String(value).padStart(3);
    return String(value);
  };
}

const quiet: BarHandle = { update() {}, setTotal() {} };

export function createProgress(out: Output, enabled: boolean): Progress {
  const { stdout, stderr } = out.streams;
  const live = enabled && !out.json && stdout.isTTY === true && stderr.isTTY === true;
  if (!live) {
    return { live: false, bar: () => quiet, line: (text) => out.line(text), stop() {} };
  }
  let multi: cliProgress.MultiBar | undefined;
  let stopped = false;
  return {
    live: true,
    bar({ total, unit, payload }) {
      multi ??= new cliProgress.MultiBar({
        stream: stderr,
        hideCursor: true,
        clearOnComplete: false,
        barsize: 30,
        barCompleteChar: '\u2588',
        barIncompleteChar: '\u2591',
        autopadding: true,
        fps: 10,
      });
      const bar = multi.create(total, 0, { label: '', ...payload }, { format: FORMATS[unit], formatValue: formatValue(unit) });
      return {
        update: (value, p) => bar.update(value, p),
        setTotal: (t) => bar.setTotal(t),
      };
    },
    line(text) {
      // Once bars are drawn, lines go above them (the bars' stream is the same terminal as stdout).
      if (multi && !stopped) multi.log(`${text}\n`);
      else out.line(text);
    },
    stop() {
      if (!multi || stopped) return;
      stopped = true;
      // stop() alone would drop the lines logged since the last redraw.
      multi.update();
      multi.stop();
    },
  };
}
