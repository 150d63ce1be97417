/**
 * How long the event loop went without a turn while some work ran: a timer
 * in the same thread notes every gap between its turns. A gap is measured
 * twice: in wall time, and in the time the main thread spent on a CPU
 * during it (Linux's /proc/thread-self/schedstat, in nanoseconds) less the
 * garbage collector's pauses within it. On a machine shared with other
 * work the two differ by far: a thread waiting for a CPU, or a collection
 * of the whole test process's heap, holds up its event loop without any of
 * the work under test running. The tests bound the second, and report both.
 */
import { readFileSync } from 'node:fs';
import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const SCHEDSTAT = '/proc/thread-self/schedstat';

/** The calling thread's time on a CPU so far, in ms (wall time where the kernel does not say). */
function threadCpuMs(): number {
  try {
    return Number(readFileSync(SCHEDSTAT, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return performance.now();
  }
}

/** V8's full collection, reached without a command-line flag. */
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

export interface Stalls<T> {
  result: T;
  /** The longest gap between the timer's turns, in wall time (ms). */
  wallMs: number;
  /** The most CPU time the thread spent within one gap, less collection pauses in it (ms): work that held the event loop. */
  cpuMs: number;
  /** Gaps seen: a few mean the work never let the timer in. */
  turns: number;
}

/** Runs `work`, noting the event loop's longest gap meanwhile. */
export async function stallsDuring<T>(work: () => Promise<T>): Promise<Stalls<T>> {
  // The work starts on a tidy heap, once the collection's own sweeping is done.
  gc();
  await new Promise((resolve) => setTimeout(resolve, 100));
  const pauses: PerformanceEntry[] = [];
  const observer = new PerformanceObserver((list) => pauses.push(...list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  const gaps: Array<{ from: number; to: number; cpu: number }> = [];
  let lastWall = performance.now();
  let lastCpu = threadCpuMs();
  const note = () => {
    const wall = performance.now();
    const cpu = threadCpuMs();
    gaps.push({ from: lastWall, to: wall, cpu: cpu - lastCpu });
    lastWall = wall;
    lastCpu = cpu;
  };
  let timer: NodeJS.Timeout | undefined;
  const tick = () => {
    note();
    timer = setTimeout(tick, 1);
  };
  timer = setTimeout(tick, 1);
  let result: T;
  try {
    result = await work();
    note(); // the gap up to the end counts too
  } finally {
    clearTimeout(timer);
  }
  await new Promise((resolve) => setImmediate(resolve));
  pauses.push(...observer.takeRecords());
  observer.disconnect();
  const paused = (from: number, to: number) =>
    pauses.reduce((sum, p) => sum + Math.max(0, Math.min(to, p.startTime + p.duration) - Math.max(from, p.startTime)), 0);
  return {
    result,
    wallMs: Math.max(...gaps.map((g) => g.to - g.from)),
    cpuMs: Math.max(...gaps.map((g) => Math.max(0, g.cpu - paused(g.from, g.to)))),
    turns: gaps.length,
  };
}

/**
 * Measures `work` on fresh input from `prepare` (not measured) until one run
 * holds the loop for less than `boundMs` of CPU, at most `tries` times, and
 * returns every run. Work that does not slice holds the loop the same way
 * each time (a 3,000-deep chain walked in one go: a gap of over a second,
 * every run); a collection of the test process's whole heap, whose
 * incremental marking runs on the main thread between the pauses the
 * observer reports, lands in a gap once and not again (seen in CI: 100 ms
 * in one gap of one run, 6 ms of work there once the pauses are taken off).
 * The caller checks every run's result and the least CPU against the bound.
 */
export async function leastStalled<I, T>(
  prepare: () => Promise<I> | I,
  work: (input: I) => Promise<T>,
  { boundMs = 50, tries = 3 }: { boundMs?: number; tries?: number } = {},
): Promise<Array<Stalls<T> & { input: I }>> {
  const runs: Array<Stalls<T> & { input: I }> = [];
  while (runs.length < tries && !runs.some((run) => run.cpuMs < boundMs)) {
    const input = await prepare();
    runs.push({ ...(await stallsDuring(() => work(input))), input });
  }
  return runs;
}

/** The least CPU any of the runs held the loop for in one gap (ms). */
export const leastCpuMs = (runs: Array<{ cpuMs: number }>): number => Math.min(...runs.map((run) => run.cpuMs));
