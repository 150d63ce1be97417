/** What every page of a signed-in session shares. */
import { createContext, useContext } from 'react';
import type { WebAppConfig } from '../app-config.js';
import type { Api } from './api.js';
import type { Team } from './queries.js';
import type { Credentials } from './sigv4.js';

export interface AppContextValue {
  api: Api;
  config: WebAppConfig;
  team: Team;
  /** The API key in use (to recognise it among the team's keys). */
  apiKey: string;
  signOut(message?: string): void;
  /** The storage key pair this tab signs S3 requests with, if given. */
  storageKeys: Credentials | null;
  setStorageKeys(keys: Credentials | null): void;
}

export const AppContext = createContext<AppContextValue | null>(null);

export function useApp(): AppContextValue {
  const value = useContext(AppContext);
  if (!value) throw new Error('useApp outside a signed-in session');
  return value;
}

/** A site's address, and one deploy's. */
export function siteUrl(config: WebAppConfig, slug: string, deployId?: string): string {
  return `${config.sites.scheme}//${deployId ? `${deployId.toLowerCase()}--` : ''}${slug}.${config.sites.domain}/`;
}

export function gatewayLink(base: string, cid: string): string {
  return `${base}/ipfs/${cid}/`;
}
