/**
 * The command line's settings: what `cairn login` stored in the user's
 * config directory (a JSON file only its owner may read: it holds the API
 * key and the storage secret), overridden by environment variables, over
 * the local server's defaults.
 *
 * Where: `$CAIRN_CONFIG_DIR/config.json`, else
 * `$XDG_CONFIG_HOME/cairn/config.json`, else `~/.config/cairn/config.json`
 * (on Windows `%APPDATA%\cairn\config.json`).
 */
import { chmod, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CliError } from './output.js';

/** What `cairn login` keeps. */
export interface StoredConfig {
  apiUrl?: string;
  apiKey?: string;
  storageEndpoint?: string;
  gatewayUrl?: string;
  storagePublicDomain?: string;
  sitesDomain?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** The storage key pair was made by `cairn login` (createStorageKeyPair, or the browser login): `cairn logout` revokes it. */
  storageKeyCreated?: boolean;
  /** The API key was made by the browser login: `cairn logout` revokes it (by this id, in `teamId`). */
  apiKeyCreated?: boolean;
  apiKeyId?: string;
  /** For the person reading the file: which login made the keys in it, and that logout revokes them. */
  createdBy?: string;
  teamId?: string;
  teamName?: string;
}

/** The environment variables that override the stored settings. */
export const ENV_NAMES = {
  apiUrl: 'CAIRN_API_URL',
  apiKey: 'CAIRN_API_KEY',
  storageEndpoint: 'CAIRN_STORAGE_ENDPOINT',
  gatewayUrl: 'CAIRN_GATEWAY_URL',
  storagePublicDomain: 'CAIRN_STORAGE_PUBLIC_DOMAIN',
  sitesDomain: 'CAIRN_SITES_DOMAIN',
  accessKeyId: 'CAIRN_ACCESS_KEY_ID',
  secretAccessKey: 'CAIRN_SECRET_ACCESS_KEY',
} as const;

export const DEFAULTS = {
  apiUrl: 'http://127.0.0.1:4000',
  storageEndpoint: 'http://127.0.0.1:4001',
  gatewayUrl: 'http://127.0.0.1:4002',
} as const;

export interface Settings {
  apiUrl: string;
  apiKey?: string;
  /** Where the API key came from, for `cairn whoami`. */
  apiKeyFrom?: 'environment' | 'config';
  storageEndpoint: string;
  gatewayUrl: string;
  storagePublicDomain: string;
  /** Unknown (undefined) for a remote service whose sites' domain was not given: only /ipfs/ addresses are printed then. */
  sitesDomain?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  configPath: string;
  stored: StoredConfig;
}

type Env = Record<string, string | undefined>;

export function configDir(env: Env = process.env): string {
  if (env.CAIRN_CONFIG_DIR) return env.CAIRN_CONFIG_DIR;
  // os.homedir() is $HOME where it is set; read from `env`, the home is the one this run was given.
  const home = env.HOME || homedir();
  if (process.platform === 'win32') return join(env.APPDATA || join(home, 'AppData', 'Roaming'), 'cairn');
  return join(env.XDG_CONFIG_HOME || join(home, '.config'), 'cairn');
}

export const configPath = (env: Env = process.env): string => join(configDir(env), 'config.json');

/** An http(s) URL without its trailing slashes; the message names where it came from. */
export function checkUrl(value: string, what: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError(`${what} must be an absolute http(s) URL, got "${value}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError(`${what} must be an http(s) URL, got "${value}"`);
  return value.replace(/\/+$/, '');
}

/** The API's base URL: `/graphql` at its end is accepted and dropped (both name the same service). */
export const apiBase = (value: string, what: string): string => checkUrl(value, what).replace(/\/graphql$/, '');

export function checkDomain(value: string, what: string): string {
  const domain = value.replace(/^\.+|\/+$/g, '');
  if (!domain || /[/\s]/.test(domain)) throw new CliError(`${what} must be a host name (with an optional port), got "${value}"`);
  return domain;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** On the local server the public and site domains follow the gateway's port (its own defaults); elsewhere they must be given. */
function localDomain(gatewayUrl: string, label: 'storage' | 'sites'): string | undefined {
  const url = new URL(gatewayUrl);
  if (!LOOPBACK.has(url.hostname)) return undefined;
  return `${label}.localhost:${url.port || (url.protocol === 'https:' ? '443' : '80')}`;
}

export async function readStoredConfig(path: string, warn?: (text: string) => void): Promise<StoredConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliError(`cannot read the config file ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CliError(`the config file ${path} is not valid JSON: run cairn login again, or remove it`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new CliError(`the config file ${path} does not hold a JSON object: run cairn login again, or remove it`);
  if (warn && process.platform !== 'win32') {
    const mode = (await stat(path)).mode & 0o777;
    if (mode & 0o077) warn(`the config file ${path} can be read by others (mode ${mode.toString(8)}); it holds secrets: chmod 600 it`);
  }
  return parsed as StoredConfig;
}

/**
 * Writes the config whole, readable by its owner only: a new file made
 * with mode 0600 in a directory of mode 0700, then renamed over the old one,
 * so that no reader ever sees half a file and no other user the secrets.
 */
export async function writeStoredConfig(path: string, config: StoredConfig): Promise<void> {
  const dir = join(path, '..');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  const handle = await open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(config, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    // The umask cannot add bits, but a file left from before could carry others.
    await chmod(temporary, 0o600);
    await rename(temporary, path);
  } catch (err) {
    await rm(temporary, { force: true });
    throw err;
  }
}

export async function removeStoredConfig(path: string): Promise<boolean> {
  try {
    await rm(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** The settings in force: environment over the stored config over the defaults. */
export async function loadSettings(env: Env = process.env, warn?: (text: string) => void): Promise<Settings> {
  const path = configPath(env);
  const stored = await readStoredConfig(path, warn);
  const pick = (name: keyof typeof ENV_NAMES): { value?: string; from?: 'environment' | 'config' } => {
    const fromEnv = env[ENV_NAMES[name]];
    if (fromEnv) return { value: fromEnv, from: 'environment' };
    const fromConfig = stored[name];
    if (typeof fromConfig === 'string' && fromConfig) return { value: fromConfig, from: 'config' };
    return {};
  };
  const where = (name: keyof typeof ENV_NAMES) => (env[ENV_NAMES[name]] ? ENV_NAMES[name] : `${name} in ${path}`);
  const apiUrl = apiBase(pick('apiUrl').value ?? DEFAULTS.apiUrl, where('apiUrl'));
  const storageEndpoint = checkUrl(pick('storageEndpoint').value ?? DEFAULTS.storageEndpoint, where('storageEndpoint'));
  const gatewayUrl = checkUrl(pick('gatewayUrl').value ?? DEFAULTS.gatewayUrl, where('gatewayUrl')).replace(/\/ipfs$/, '');
  const publicDomain = pick('storagePublicDomain').value;
  const sitesDomain = pick('sitesDomain').value;
  const apiKey = pick('apiKey');
  // A key pair is taken whole from one place: an id from the environment never goes with a secret from the file.
  const pairFromEnv = env[ENV_NAMES.accessKeyId] || env[ENV_NAMES.secretAccessKey];
  return {
    apiUrl,
    apiKey: apiKey.value,
    apiKeyFrom: apiKey.from,
    storageEndpoint,
    gatewayUrl,
    storagePublicDomain: publicDomain
      ? checkDomain(publicDomain, where('storagePublicDomain'))
      : (localDomain(gatewayUrl, 'storage') ?? 'storage.localhost:4002'),
    sitesDomain: sitesDomain ? checkDomain(sitesDomain, where('sitesDomain')) : localDomain(gatewayUrl, 'sites'),
    accessKeyId: pairFromEnv ? env[ENV_NAMES.accessKeyId] || undefined : stored.accessKeyId,
    secretAccessKey: pairFromEnv ? env[ENV_NAMES.secretAccessKey] || undefined : stored.secretAccessKey,
    configPath: path,
    stored,
  };
}
