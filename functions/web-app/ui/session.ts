/**
 * What the app keeps between page loads of one tab: the API key and the
 * storage key pair, in sessionStorage (gone when the tab closes, never sent
 * anywhere but as a request's credentials).
 */
import type { Credentials } from './sigv4.js';

const API_KEY = 'cairn.apiKey';
const STORAGE_KEYS = 'cairn.storageKeys';

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
  clear(): void {
    write(API_KEY, null);
    write(STORAGE_KEYS, null);
  },
};
