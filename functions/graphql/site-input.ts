/**
 * Site inputs: checked field by field (BAD_USER_INPUT naming the field at
 * fault) and turned into the stored site. In an update a field left out
 * keeps its value and null clears an optional one.
 */
import { CID } from 'multiformats/cid';
import type { ApiKeyCaller } from '../core/data/api-keys.js';
import {
  SLUG_PATTERN,
  type BuildSettings,
  type DeploySettings,
  type EnvironmentVariable,
  type ForkPullRequests,
  type NewSite,
  type Site,
  type SitePlatform,
  type SiteSource,
  type VariableScope,
} from '../core/data/sites.js';
import { badInput } from './errors.js';
import { parseRepositoryUrl } from '../core/hosting/repository-url.js';

export interface EnvironmentVariableInput {
  name: string;
  value?: string | null;
  /** Left out (or null): as the variable of that name is now, else false. */
  secret?: boolean | null;
  /** Left out (or null): as the variable of that name is now, else ALL. */
  scope?: VariableScope | null;
}

export interface BuildSettingsInput {
  buildCommand?: string | null;
  baseDirectoryPath?: string | null;
  publishDirectoryPath?: string | null;
  dockerImage?: string | null;
  environmentVariables?: EnvironmentVariableInput[] | null;
}

export interface SiteSourceInput {
  repository?: { type: 'GIT_HOST'; url: string; branch: string } | null;
  ipfs?: { cid?: string | null } | null;
}

export interface DeploySettingsInput {
  autoPublishing?: boolean | null;
  prDeployPreviews?: boolean | null;
  altUseProxy?: boolean | null;
  forkPullRequests?: ForkPullRequests | null;
  source?: SiteSourceInput | null;
}

export interface SiteInput {
  name?: string | null;
  description?: string | null;
  platform?: SitePlatform | null;
  buildSettings?: BuildSettingsInput | null;
  deploySettings?: DeploySettingsInput | null;
}

export const LIMITS = {
  description: 1000,
  buildCommand: 4096,
  path: 1024,
  dockerImage: 255,
  environmentVariables: 100,
  environmentVariableName: 255,
  environmentVariableValue: 16_384,
  /**
   * A secret's value is masked wherever a build prints it; a shorter one
   * would mask ordinary words of the log (and is no secret anyway).
   */
  secretValueMin: 4,
  url: 2048,
  branch: 255,
} as const;

// Control characters other than tab and newline have no place in these settings.

const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/;

const LINE_CONTROL = /[\u0000-\u001f\u007f]/;

function text(value: string, field: string, max: number, { multiline = false } = {}): string {
  if (value.length > max) throw badInput(`${field} is longer than ${max} characters`, field);
  if ((multiline ? CONTROL : LINE_CONTROL).test(value)) throw badInput(`${field} contains control characters`, field);
  return value;
}

function name(value: string, field: string): string {
  if (!SLUG_PATTERN.test(value)) {
    throw badInput(
      `${field} "${value.slice(0, 80)}" is not a valid site name: a site's name is its slug, so use lowercase letters, digits and inner hyphens, at most 63 characters (like hidden-waterfall-6189)`,
      field,
    );
  }
  return value;
}

function relativePath(value: string, field: string): string {
  text(value, field, LIMITS.path);
  if (value.startsWith('/') || value.split(/[\\/]/).includes('..')) {
    throw badInput(`${field} must be a path relative to the repository, without ".." (got "${value.slice(0, 80)}")`, field);
  }
  return value;
}

function dockerImage(value: string, field: string): string {
  text(value, field, LIMITS.dockerImage);
  if (!/^[A-Za-z0-9][A-Za-z0-9._\-/:@]*$/.test(value))
    throw badInput(`${field} is not a container image reference (like node:slim)`, field);
  return value;
}

/**
 * The new list of variables. A secret's value is write-only: the API never
 * returns it, so a client resending the list it read has none to send. A
 * secret variable given without a value (null, left out or empty) keeps the
 * value the variable of that name has now; a new secret needs one. `secret`
 * and `scope` left out keep the variable's own too, so a client that knows
 * nothing of them (the service description's `{ name, value }`) neither
 * exposes a secret nor widens a scope by resending what it read. Turning a
 * secret into a plain variable needs `secret: false` and drops the sealed
 * value (it is never turned back into clear text).
 */
function environmentVariables(
  list: EnvironmentVariableInput[],
  field: string,
  current: readonly EnvironmentVariable[],
): BuildSettings['environmentVariables'] {
  if (list.length > LIMITS.environmentVariables) throw badInput(`${field} holds more than ${LIMITS.environmentVariables} variables`, field);
  const before = new Map(current.map((v) => [v.name, v]));
  const seen = new Set<string>();
  return list.map((variable, i): EnvironmentVariable => {
    const at = `${field}[${i}]`;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(variable.name) || variable.name.length > LIMITS.environmentVariableName) {
      throw badInput(
        `${at}.name "${variable.name.slice(0, 80)}" must be letters, digits and underscores, not starting with a digit`,
        `${at}.name`,
      );
    }
    if (seen.has(variable.name)) throw badInput(`${at}.name "${variable.name}" appears twice`, `${at}.name`);
    seen.add(variable.name);
    const was = before.get(variable.name);
    const secret = variable.secret ?? was?.secret === true;
    const scope: VariableScope = variable.scope ?? was?.scope ?? 'ALL';
    const value = variable.value ?? null;
    if (value !== null) text(value, `${at}.value`, LIMITS.environmentVariableValue, { multiline: true });
    if (!secret) return { name: variable.name, value, scope };
    if (value !== null && value !== '') {
      if (value.length < LIMITS.secretValueMin) {
        throw badInput(
          `${at}.value: a secret's value must be at least ${LIMITS.secretValueMin} characters (it is masked wherever a build prints it)`,
          `${at}.value`,
        );
      }
      return { name: variable.name, value, secret: true, scope }; // sealed by the store as it writes
    }
    if (was?.secret && was.sealed) return { name: variable.name, secret: true, scope, sealed: was.sealed };
    throw badInput(
      `${at}.value is required: the new secret variable ${variable.name} needs a value (only a secret already set keeps its own when none is given)`,
      `${at}.value`,
    );
  });
}

function repositoryUrl(value: string, field: string): string {
  text(value, field, LIMITS.url);
  try {
    parseRepositoryUrl(value);
  } catch (err) {
    // Deploys clone public repositories over HTTP(S): anything else would only fail at deploy time.
    throw badInput(`${field}: ${(err as Error).message}`, field);
  }
  return value;
}

function branch(value: string, field: string): string {
  text(value, field, LIMITS.branch);
  if (
    value === '' ||
    /[\s~^:?*[\\]/.test(value) ||
    value.includes('..') ||
    value.startsWith('-') ||
    value.startsWith('/') ||
    value.endsWith('/') ||
    value.endsWith('.lock')
  ) {
    throw badInput(`${field} "${value.slice(0, 80)}" is not a valid branch name`, field);
  }
  return value;
}

function source(input: SiteSourceInput, field: string): SiteSource {
  // The schema's @oneOf already makes exactly one of the two present.
  if (input.repository) {
    const r = input.repository;
    return {
      kind: 'repository',
      type: r.type,
      url: repositoryUrl(r.url, `${field}.repository.url`),
      branch: branch(r.branch, `${field}.repository.branch`),
    };
  }
  const cid = input.ipfs?.cid ?? null;
  if (cid !== null) {
    let valid = false;
    try {
      CID.parse(cid);
      valid = true;
    } catch {
      valid = false;
    }
    if (!valid) throw badInput(`${field}.ipfs.cid is not a CID (v0 like Qm..., or v1 in base32 like bafy...)`, `${field}.ipfs.cid`);
  }
  return { kind: 'ipfs', cid };
}

const has = <T extends object>(input: T, key: keyof T) => Object.prototype.hasOwnProperty.call(input, key);

/** Applies a BuildSettingsInput to settings: given fields change, absent ones stay, null clears. */
function buildSettings(current: BuildSettings, input: BuildSettingsInput, field: string): BuildSettings {
  const next: BuildSettings = { ...current, environmentVariables: current.environmentVariables ?? [] };
  const optional = <K extends 'buildCommand' | 'baseDirectoryPath' | 'publishDirectoryPath' | 'dockerImage'>(
    key: K,
    check: (v: string, f: string) => string,
  ) => {
    if (!has(input, key)) return;
    const value = input[key];
    next[key] = value === null || value === undefined ? null : check(value, `${field}.${key}`);
  };
  optional('buildCommand', (v, f) => text(v, f, LIMITS.buildCommand, { multiline: true }));
  optional('baseDirectoryPath', relativePath);
  optional('publishDirectoryPath', relativePath);
  optional('dockerImage', dockerImage);
  if (has(input, 'environmentVariables')) {
    next.environmentVariables = input.environmentVariables
      ? environmentVariables(input.environmentVariables, `${field}.environmentVariables`, current.environmentVariables ?? [])
      : [];
  }
  return next;
}

function deploySettings(current: DeploySettings | undefined, input: DeploySettingsInput, field: string): DeploySettings {
  const required = (key: 'autoPublishing' | 'prDeployPreviews', fallback: boolean): boolean => {
    if (!has(input, key)) return current?.[key] ?? fallback;
    const value = input[key];
    if (value === null || value === undefined) throw badInput(`${field}.${key} cannot be null`, `${field}.${key}`);
    return value;
  };
  let nextSource = current?.source;
  if (has(input, 'source')) {
    if (!input.source) throw badInput(`${field}.source cannot be null`, `${field}.source`);
    nextSource = source(input.source, `${field}.source`);
  }
  if (!nextSource) throw badInput(`${field}.source is required: a repository to build or an IPFS CID`, `${field}.source`);
  let forkPullRequests: ForkPullRequests = current?.forkPullRequests ?? 'NOT_BUILT';
  if (has(input, 'forkPullRequests')) {
    if (!input.forkPullRequests) throw badInput(`${field}.forkPullRequests cannot be null`, `${field}.forkPullRequests`);
    forkPullRequests = input.forkPullRequests;
  }
  return {
    autoPublishing: required('autoPublishing', true),
    prDeployPreviews: required('prDeployPreviews', false),
    altUseProxy: has(input, 'altUseProxy') ? (input.altUseProxy ?? null) : (current?.altUseProxy ?? null),
    forkPullRequests,
    source: nextSource,
  };
}

/** A new site from CreateSiteInput, in the caller's team. */
export function newSite(input: SiteInput, caller: Pick<ApiKeyCaller, 'teamId' | 'accountId'>): NewSite {
  const site: NewSite = {
    teamId: caller.teamId,
    createdBy: caller.accountId,
    description:
      input.description === undefined || input.description === null
        ? null
        : text(input.description, 'input.description', LIMITS.description, { multiline: true }),
    platform: input.platform ?? 'ipfs',
    buildSettings: buildSettings({ environmentVariables: [] }, input.buildSettings ?? {}, 'input.buildSettings'),
    deploySettings: deploySettings(undefined, input.deploySettings ?? {}, 'input.deploySettings'),
  };
  if (input.name !== undefined && input.name !== null) {
    site.name = name(input.name, 'input.name');
    site.slug = site.name;
  }
  return site;
}

/** The site with UpdateSiteInput applied. */
export function updatedSite(current: Site, input: SiteInput): Site {
  const next: Site = { ...current };
  if (has(input, 'name')) {
    if (input.name === null || input.name === undefined) throw badInput('input.name cannot be null', 'input.name');
    next.name = name(input.name, 'input.name');
    next.slug = next.name;
  }
  if (has(input, 'description')) {
    next.description =
      input.description === null || input.description === undefined
        ? null
        : text(input.description, 'input.description', LIMITS.description, { multiline: true });
  }
  if (has(input, 'platform')) next.platform = input.platform ?? null;
  if (has(input, 'buildSettings')) {
    if (!input.buildSettings) throw badInput('input.buildSettings cannot be null', 'input.buildSettings');
    next.buildSettings = buildSettings(current.buildSettings, input.buildSettings, 'input.buildSettings');
  }
  if (has(input, 'deploySettings')) {
    if (!input.deploySettings) throw badInput('input.deploySettings cannot be null', 'input.deploySettings');
    next.deploySettings = deploySettings(current.deploySettings, input.deploySettings, 'input.deploySettings');
  }
  return next;
}
