/**
 * A running deploy's log: phase lines with timestamps and the build's
 * output as it comes, written to the log store at least every FLUSH_MS so
 * `Deploy.log` shows it growing. Memory and storage stay bounded: past
 * MAX_LOG_BYTES the log keeps its head and its latest tail with a marker
 * between them.
 *
 * The values of the deploy's secret variables are masked as `***` in all
 * the log holds (its lines and the build's output), before anything is
 * stored: the log store, the API's `Deploy.log` and the notifications'
 * log tails only ever see the masked text. A secret printed across two
 * pieces of output is caught too: the end of each piece that could be the
 * start of a secret waits for the next one (or for the next line of the
 * log's own, or its end).
 */
import type { LogStore } from '../ports/log-store.js';
import type { Logger } from '../logger.js';

export const MAX_LOG_BYTES = 4 * 1024 * 1024;
const HEAD_BYTES = MAX_LOG_BYTES / 2;
const TAIL_BYTES = MAX_LOG_BYTES / 2 - 1024;
const FLUSH_MS = 1000;

/** What a secret's value becomes in the log. */
export const MASK = '***';
/**
 * Values shorter than this are not masked: masking a word of two or three
 * letters would blank ordinary output. The API refuses secret values this
 * short (site-input.ts); a line of a multi-line secret may be.
 */
export const MIN_MASKED_LENGTH = 4;

/** Half-open ranges of a text, [start, end). */
type Range = readonly [number, number];

/**
 * The secret values to mask: each value, and each line of a multi-line one
 * (a PEM key printed line by line), longest first.
 */
export class SecretMask {
  private readonly values: string[];
  /** The longest value's length: output ending in fewer characters than that may still be a secret's start. */
  readonly longest: number;

  constructor(secrets: Iterable<string>) {
    const values = new Set<string>();
    for (const secret of secrets) {
      for (const v of [secret, ...secret.split('\n').map((l) => l.replace(/\r$/, ''))]) if (v.length >= MIN_MASKED_LENGTH) values.add(v);
    }
    this.values = [...values].sort((a, b) => b.length - a.length);
    this.longest = this.values[0]?.length ?? 0;
  }

  get empty(): boolean {
    return this.values.length === 0;
  }

  /** Every place a value occurs, overlapping ones too (a secret that is part of another, or repeats itself). */
  private occurrences(text: string): Range[] {
    const found: Range[] = [];
    for (const v of this.values) {
      for (let at = text.indexOf(v); at !== -1; at = text.indexOf(v, at + 1)) found.push([at, at + v.length]);
    }
    return found.sort((a, b) => a[0] - b[0]);
  }

  /** `text` up to `end`, each run of characters covered by an occurrence written as one MASK. */
  private render(text: string, end: number, found: readonly Range[]): string {
    let out = '';
    let at = 0;
    for (const [start, stop] of found) {
      if (start >= end) break;
      const until = Math.min(stop, end);
      if (until <= at) continue;
      // A run that starts where the last ended, or inside it, goes on under the same MASK.
      if (start > at) out += text.slice(at, start) + MASK;
      else if (at === 0) out += MASK;
      at = until;
    }
    return out + text.slice(at, end);
  }

  /** The text with every secret masked (a whole text: nothing is to follow it). */
  apply(text: string): string {
    return this.empty ? text : this.render(text, text.length, this.occurrences(text));
  }

  /**
   * Output so far split into what can be written now (masked) and what must
   * wait for more: the last `longest - 1` characters (the start of a secret
   * whose end has not come yet), and from the start of any secret that
   * reaches into those (so what is held never begins inside a secret and
   * is masked whole when it is written).
   */
  split(text: string): { ready: string; held: string } {
    if (this.empty) return { ready: text, held: '' };
    const found = this.occurrences(text);
    const tail = Math.max(0, text.length - (this.longest - 1));
    let cut = tail;
    for (const [start, stop] of found) if (stop > tail && start < cut) cut = start;
    return { ready: this.render(text, cut, found), held: text.slice(cut) };
  }
}

export class DeployLog {
  private head = '';
  private headBytes = 0;
  /** Pieces after the head, newest last, trimmed to TAIL_BYTES once the log is over the limit. */
  private tail: string[] = [];
  private tailBytes = 0;
  private dropped = 0;
  private timer?: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();
  private dirty = false;
  private readonly started = Date.now();
  private mask = new SecretMask([]);
  /** Output that may end with the start of a secret: written with the next output that settles it, the next line, or at close. */
  private held = '';

  constructor(
    private readonly store: LogStore,
    private readonly key: string,
    private readonly logger: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** The log of a deploy taken up again (another process wrote its beginning): new lines go after what is stored. */
  static async continued(store: LogStore, key: string, logger: Logger): Promise<DeployLog> {
    const log = new DeployLog(store, key, logger);
    log.output((await store.read(key).catch(() => undefined)) ?? '');
    return log;
  }

  /** From here on, these values are masked wherever they appear (call before the build runs). */
  maskSecrets(values: Iterable<string>): void {
    this.release();
    this.mask = new SecretMask(values);
  }

  /** The text with the deploy's secrets masked (a failure's reason, for the record and its notifications). */
  masked(text: string): string {
    return this.mask.apply(text);
  }

  /** A line of the deploy's own: `2026-11-25T08:00:00.000Z  text`. */
  line(text: string): void {
    this.release();
    this.append(this.mask.apply(`${this.now().toISOString()}  ${text}\n`));
  }

  /** Output as it comes (the build's stdout and stderr). */
  output(text: string): void {
    const { ready, held } = this.mask.split(this.held + text);
    this.held = held;
    if (ready) this.append(ready);
  }

  /** Writes the output held back: nothing more comes to complete a secret in it. */
  private release(): void {
    if (!this.held) return;
    const held = this.held;
    this.held = '';
    this.append(this.mask.apply(held));
  }

  private append(text: string): void {
    const bytes = Buffer.byteLength(text);
    if (this.headBytes + bytes <= HEAD_BYTES && this.tail.length === 0) {
      this.head += text;
      this.headBytes += bytes;
    } else {
      this.tail.push(text);
      this.tailBytes += bytes;
      while (this.tailBytes > TAIL_BYTES && this.tail.length > 1) {
        const gone = this.tail.shift()!;
        const goneBytes = Buffer.byteLength(gone);
        this.tailBytes -= goneBytes;
        this.dropped += goneBytes;
      }
    }
    this.dirty = true;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, FLUSH_MS);
  }

  text(): string {
    const marker = this.dropped ? `\n[... ${this.dropped} bytes of log left out: a log keeps its first and last 2 MiB ...]\n` : '';
    return this.head + marker + this.tail.join('');
  }

  /** Writes what is there now; a failure is logged and retried with the next write (the deploy goes on). */
  flush(): Promise<void> {
    this.writing = this.writing.then(async () => {
      if (!this.dirty) return;
      this.dirty = false;
      try {
        await this.store.write(this.key, this.text());
      } catch (err) {
        this.dirty = true;
        this.logger.warn('could not write a deploy log; tried again with the next lines', { key: this.key, err });
      }
    });
    return this.writing;
  }

  /** The last write: call once the deploy has ended. */
  async close(): Promise<void> {
    this.release();
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** Milliseconds since the log began. */
  elapsed(): number {
    return Date.now() - this.started;
  }
}
