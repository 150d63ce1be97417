/**
 * Hash routing (`/#/sites/<id>`): the server has one page, at `/`, and the
 * HTTP API routes only `/` and `/app/...` to it.
 */
import { useEffect, useState } from 'react';

export type Route =
  | { name: 'sites' }
  | { name: 'new-site' }
  | { name: 'site'; siteId: string }
  | { name: 'site-settings'; siteId: string }
  | { name: 'site-integrations'; siteId: string }
  | { name: 'site-domains'; siteId: string }
  | { name: 'deploy'; siteId: string; deployId: string }
  | { name: 'team' }
  | { name: 'settings' }
  | { name: 'storage' }
  | { name: 'bucket'; bucket: string; prefix: string }
  | { name: 'invitation'; token: string }
  | { name: 'welcome'; token: string }
  | { name: 'forgot-password' }
  | { name: 'reset-password'; token: string }
  | { name: 'not-found'; path: string };

const segment = (s: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

let navigated = false;

/** Whether the user has moved within the app since it loaded (a route change, or signing in). */
export const hasNavigated = (): boolean => navigated;
export function markNavigated(): void {
  navigated = true;
}

export function parseHash(hash: string): Route {
  const path = hash.replace(/^#/, '').replace(/^\/+/, '');
  const [head = '', ...rest] = path.split('/');
  const parts = rest.map(segment);
  if (head === '' || (head === 'sites' && parts.length === 0)) return { name: 'sites' };
  if (head === 'sites' && parts[0] === 'new' && parts.length === 1) return { name: 'new-site' };
  if (head === 'sites' && parts.length === 1 && parts[0]) return { name: 'site', siteId: parts[0] };
  if (head === 'sites' && parts.length === 2 && parts[1] === 'settings' && parts[0]) return { name: 'site-settings', siteId: parts[0] };
  if (head === 'sites' && parts.length === 2 && parts[1] === 'integrations' && parts[0])
    return { name: 'site-integrations', siteId: parts[0] };
  if (head === 'sites' && parts.length === 2 && parts[1] === 'domains' && parts[0]) return { name: 'site-domains', siteId: parts[0] };
  if (head === 'sites' && parts.length === 3 && parts[1] === 'deploys' && parts[0] && parts[2])
    return { name: 'deploy', siteId: parts[0], deployId: parts[2] };
  if (head === 'team' && parts.length === 0) return { name: 'team' };
  if (head === 'settings' && parts.length === 0) return { name: 'settings' };
  if (head === 'storage' && parts.length === 0) return { name: 'storage' };
  // The prefix keeps its slashes: everything after the bucket is the "folder" shown.
  if (head === 'storage' && parts[0]) return { name: 'bucket', bucket: parts[0], prefix: parts.slice(1).join('/') };
  // The pages one-time links open (pages/AccountLinks.tsx): the token stays in the fragment, which no server sees.
  if ((head === 'invitation' || head === 'welcome' || head === 'reset-password') && parts.length === 1 && parts[0])
    return { name: head, token: parts[0] };
  if (head === 'forgot-password' && parts.length === 0) return { name: 'forgot-password' };
  return { name: 'not-found', path: `/${path}` };
}

export function href(route: Route): string {
  const e = encodeURIComponent;
  switch (route.name) {
    case 'sites':
      return '#/sites';
    case 'new-site':
      return '#/sites/new';
    case 'site':
      return `#/sites/${e(route.siteId)}`;
    case 'site-settings':
      return `#/sites/${e(route.siteId)}/settings`;
    case 'site-integrations':
      return `#/sites/${e(route.siteId)}/integrations`;
    case 'site-domains':
      return `#/sites/${e(route.siteId)}/domains`;
    case 'deploy':
      return `#/sites/${e(route.siteId)}/deploys/${e(route.deployId)}`;
    case 'team':
      return '#/team';
    case 'settings':
      return '#/settings';
    case 'storage':
      return '#/storage';
    case 'bucket':
      return `#/storage/${e(route.bucket)}${route.prefix ? `/${route.prefix.split('/').map(e).join('/')}` : ''}`;
    case 'invitation':
    case 'welcome':
    case 'reset-password':
      return `#/${route.name}/${e(route.token)}`;
    case 'forgot-password':
      return '#/forgot-password';
    case 'not-found':
      return `#${route.path}`;
  }
}

export function navigate(route: Route): void {
  window.location.hash = href(route);
}

export function useRoute(): Route {
  const [route, setRoute] = useState<Route>(() => parseHash(window.location.hash));
  useEffect(() => {
    const onChange = () => {
      markNavigated();
      setRoute(parseHash(window.location.hash));
    };
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
