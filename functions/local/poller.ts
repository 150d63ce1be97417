/**
 * A worker that looks for something to do, on wake-ups and every
 * interval: one look at a time (a wake-up during a look makes one more
 * look after it), and a look that fails is reported and left to the next
 * one, never fatal. The local deploy queue and the notification outbox
 * each run one.
 */
export class Poller {
  private timer?: NodeJS.Timeout;
  private looking?: Promise<void>;
  private again = false;
  private stopped = false;

  constructor(
    private readonly look: () => Promise<void>,
    private readonly failed: (err: unknown) => void,
  ) {}

  get isStopped(): boolean {
    return this.stopped;
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => this.wake(), intervalMs);
    this.timer.unref();
    this.wake();
  }

  /** Looks now, or once more after the look under way. */
  wake(): void {
    if (this.stopped) return;
    if (this.looking) {
      this.again = true;
      return;
    }
    this.looking = this.look()
      .catch((err: unknown) => this.failed(err))
      .finally(() => {
        this.looking = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** No more looks; resolves when the one under way is over (stopped at once, before it awaits anything). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.looking;
  }
}
