/**
 * A running deploy's log: phase lines with timestamps and the build's
 * output as it comes, written to the log store at least every FLUSH_MS so
 * `Deploy.log` shows it growing. Memory and storage stay bounded: past
 * MAX_LOG_BYTES the log keeps its head and its latest tail with a marker
 * between them.
 */
import type { LogStore } from '../core/ports/log-store.js';
import type { Logger } from '../core/logger.js';

export const MAX_LOG_BYTES = 4 * 1024 * 1024;
const HEAD_BYTES = MAX_LOG_BYTES / 2;
const TAIL_BYTES = MAX_LOG_BYTES / 2 - 1024;
const FLUSH_MS = 1000;

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

  /** A line of the deploy's own: `2026-11-25T08:00:00.000Z  text`. */
  line(text: string): void {
    this.append(`${this.now().toISOString()}  ${text}\n`);
  }

  /** Output as it comes (the build's stdout and stderr). */
  output(text: string): void {
    this.append(text);
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
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** Milliseconds since the log began. */
  elapsed(): number {
    return Date.now() - this.started;
  }
}
