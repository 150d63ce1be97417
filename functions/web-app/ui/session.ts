/**
 * What the app keeps between page loads of one tab: the API key and the
 * storage key pair, in sessionStorage (gone when the tab closes, never sent
 * anywhere but as a request's credentials). A person signed in with an
 * e-mail and a password has nothing secret here: the session is an
 * HttpOnly cookie this code cannot read, and its CSRF token is asked for
 * again on each load. Only two plain facts are kept for them: the team
 * they chose, and that the tab had a session (so that finding none on the
 * next load says it ended, rather than showing a bare sign-in page).
 */
import type { Credentials } from './sigv4.js';

const API_KEY = 'cairn.apiKey';
const STORAGE_KEYS = 'cairn.storageKeys';
const TEAM = 'cairn.team';
const HAD_SESSION = 'cairn.hadSession';

function read(name: string): string | null {
  try {
    return sessionStorage.getItem(name);
  } catch {
    return null;
  }
}

function write(name: string, value: string | null): void {
  try {
    if (value === null) sessionStorage.removeItem(name);
    else sessionStorage.setItem(name, value);
  } catch {
    // Storage refused (a private mode): the key lasts as long as the page.
  }
}

export const session = {
  apiKey: (): string | null => read(API_KEY),
  setApiKey: (key: string | null): void => write(API_KEY, key),
  storageKeys(): Credentials | null {
    const raw = read(STORAGE_KEYS);
    if (!raw) return null;
    try {
      const parsed = JSON.parse(raw) as Partial<Credentials>;
      return typeof parsed.accessKeyId === 'string' && typeof parsed.secretAccessKey === 'string'
        ? { accessKeyId: parsed.accessKeyId, secretAccessKey: parsed.secretAccessKey }
        : null;
    } catch {
      return null;
    }
  },
  setStorageKeys: (keys: Credentials | null): void => write(STORAGE_KEYS, keys === null ? null : JSON.stringify(keys)),
  /** The id of the team a person chose (X-Cairn-Team), not a secret. */
  team: (): string | null => read(TEAM),
  setTeam: (id: string | null): void => write(TEAM, id),
  hadSession: (): boolean => read(HAD_SESSION) === 'yes',
  setHadSession: (had: boolean): void => write(HAD_SESSION, had ? 'yes' : null),
  clear(): void {
    write(API_KEY, null);
    write(STORAGE_KEYS, null);
    write(TEAM, null);
    write(HAD_SESSION, null);
  },
};
