/** Loading, polling and actions, with their states for the page. */
import { useCallback, useEffect, useRef, useState } from 'react';
import { messageOf } from './api.js';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  /** Loads again; `quiet` keeps what is shown while it does (polling). */
  reload(quiet?: boolean): Promise<void>;
  setData(update: (prev: T | undefined) => T | undefined): void;
}

/** Loads `load()` now and whenever `deps` change; answers that arrive out of order are dropped. */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const generation = useRef(0);
  const mounted = useRef(true);
  const loader = useRef(load);
  loader.current = load;

  const reload = useCallback(async (quiet = false) => {
    const mine = ++generation.current;
    if (!quiet) setLoading(true);
    try {
      const value = await loader.current();
      if (mounted.current && mine === generation.current) {
        setData(value);
        setError(undefined);
      }
    } catch (err) {
      if (mounted.current && mine === generation.current) setError(messageOf(err));
    } finally {
      if (mounted.current && mine === generation.current) setLoading(false);
    }
  }, []);

  useEffect(() => {
    mounted.current = true;
    setData(undefined);
    void reload();
    return () => {
      mounted.current = false;
    };
    // deps are the caller's own list (as with useEffect)
  }, deps);

  return { data, error, loading, reload, setData: (update) => setData((prev) => update(prev)) };
}

/** Calls `tick` every `ms` while `ms` is a number; null stops it. A tick waits for the one before. */
export function usePolling(tick: () => Promise<unknown>, ms: number | null): void {
  const saved = useRef(tick);
  saved.current = tick;
  useEffect(() => {
    if (ms === null) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout>;
    const loop = async () => {
      if (stopped) return;
      try {
        await saved.current();
      } catch {
        // The page shows the load's own error; polling just carries on.
      }
      if (!stopped) timer = setTimeout(loop, ms);
    };
    timer = setTimeout(loop, ms);
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [ms]);
}

export interface ActionResult {
  kind: 'ok' | 'error';
  text: string;
}

export interface Actions {
  /** The label of the action running, if any. */
  pending: string | null;
  result: ActionResult | null;
  run<T>(label: string, action: () => Promise<T>, success: (value: T) => string): Promise<T | undefined>;
  clear(): void;
}

/** Runs one action at a time and keeps what came of the last one, for the page to show. */
export function useActions(): Actions {
  const [pending, setPending] = useState<string | null>(null);
  const [result, setResult] = useState<ActionResult | null>(null);
  const mounted = useRef(true);
  useEffect(
    () => () => {
      mounted.current = false;
    },
    [],
  );
  const run = useCallback(async <T>(label: string, action: () => Promise<T>, success: (value: T) => string) => {
    setPending(label);
    setResult(null);
    try {
      const value = await action();
      if (mounted.current) setResult({ kind: 'ok', text: success(value) });
      return value;
    } catch (err) {
      if (mounted.current) setResult({ kind: 'error', text: `${label} failed: ${messageOf(err)}` });
      return undefined;
    } finally {
      if (mounted.current) setPending(null);
    }
  }, []);
  return { pending, result, run, clear: () => setResult(null) };
}

export interface More {
  busy: boolean;
  error?: string;
  /** Fetches the next page through `next`, unless one is on its way. */
  load(): Promise<void>;
}

/** The state of a list's "load more" button: `next` fetches a page and appends it. */
export function useMore(next: () => Promise<void>): More {
  const [state, setState] = useState<{ busy: boolean; error?: string }>({ busy: false });
  const load = async () => {
    if (state.busy) return;
    setState({ busy: true });
    try {
      await next();
      setState({ busy: false });
    } catch (err) {
      setState({ busy: false, error: messageOf(err) });
    }
  };
  return { ...state, load };
}

/** Sets the tab's title while the page is shown. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = title ? `${title} · Cairn` : 'Cairn';
  }, [title]);
}
