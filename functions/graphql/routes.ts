/**
 * What the API port answers besides `/graphql`, by path, for both doors:
 * the hooks (`/hooks/`), the CAR import endpoint (`/imports/`), signing in
 * and out (`/auth/`) and the web app (`/`, `/app/...`). Each is a route written against the HTTP seam; the
 * local door and the Lambda door both ask `sideRouteFor` first and hand
 * everything else to Apollo.
 */
import type { HttpRequest } from '../core/http/types.js';
import type { Services } from '../core/services.js';
import type { GitHookServices } from '../core/hosting/git-hooks.js';
import { handleHook, isHookPath } from './hooks-http.js';
import { handleImport, isImportPath, type ImportServices } from './imports-http.js';
import { handleWebApp, isWebAppPath } from '../web-app/serve.js';
import { handleAuth, isAuthPath } from './accounts-http.js';
import { handleOidc, isOidcPath } from './oidc-http.js';
import { handlePasskeys, isPasskeyPath } from './passkeys-http.js';
import { handleRecoveryCodes, isRecoveryCodePath } from './recovery-codes-http.js';
import { handleAccountLinks, isAccountLinkPath, type AccountLinkServices } from './account-links-http.js';
import type { AuthServices } from '../core/auth/sign-in.js';
import { handleDevice, isDevicePath, type DeviceServices } from './device-http.js';

/** What the side routes read and write together: the hooks', the imports', signing in's and the web app's (its configuration). */
export type SideRouteServices = GitHookServices &
  ImportServices &
  AuthServices &
  DeviceServices &
  AccountLinkServices &
  Pick<Services, 'config' | 'logger' | 'teams'>;

export interface SideRoute {
  matches(rawPath: string): boolean;
  handle(services: SideRouteServices, req: HttpRequest): Promise<Response>;
}

export const SIDE_ROUTES: readonly SideRoute[] = [
  { matches: isHookPath, handle: handleHook },
  { matches: isImportPath, handle: handleImport },
  { matches: isDevicePath, handle: handleDevice },
  { matches: isAccountLinkPath, handle: handleAccountLinks },
  { matches: isOidcPath, handle: handleOidc },
  { matches: isPasskeyPath, handle: handlePasskeys },
  { matches: isRecoveryCodePath, handle: handleRecoveryCodes },
  { matches: isAuthPath, handle: handleAuth },
  { matches: isWebAppPath, handle: handleWebApp },
];

/** The route that answers this path, or undefined for the GraphQL API itself. */
export const sideRouteFor = (rawPath: string): SideRoute | undefined => SIDE_ROUTES.find((r) => r.matches(rawPath));
