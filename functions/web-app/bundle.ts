/** Names the web app's build (build.ts) and its route (serve.ts) share. */

/** Where the built files go in the GraphQL function's bundle, beside the handler. */
export const WEB_APP_BUNDLE_DIR = 'web-app';

/** The URL path the content-hashed files are served under. */
export const ASSET_PATH = '/app/assets/';
