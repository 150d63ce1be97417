/** What every page of a signed-in session shares. */
import { createContext, useContext } from 'react';
import type { WebAppConfig } from '../app-config.js';
import type { Api } from './api.js';
import type { PersonSession } from './auth.js';
import type { Team } from './queries.js';
import type { Credentials } from './sigv4.js';

export interface AppContextValue {
  api: Api;
  config: WebAppConfig;
  team: Team;
  /** The API key in use, for a sign-in with one (to recognise it among the team's keys). */
  apiKey: string | null;
  /** The person signed in with an e-mail and a password (their session cookie is the credential), else null. */
  person: PersonSession | null;
  /** Signs this browser out (a session's is ended on the service first), back to sign-in with `message`. */
  signOut(message?: string): void;
  /** Back to sign-in with `message`, for a sign-in that has already ended on the service (signed out everywhere, revoked). */
  signedOut(message: string): void;
  /** Works in another of the person's teams from now on (X-Cairn-Team). */
  switchTeam(teamId: string): void;
  /** The team worked in was renamed here: the header, the switcher and the pages show the new name. */
  teamRenamed(name: string): void;
  /** A team the person just made: it joins their teams (they own it) and is the one they work in from now on. */
  enterNewTeam(team: Team): void;
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

/** A site's IPNS name on the gateway. */
export function ipnsLink(base: string, name: string): string {
  return `${base}/ipns/${name}/`;
}
