/**
 * Where the web app is served from, which the S3 endpoint needs as much as
 * the app does (its CORS rules): derived from the one Config, here so that
 * the S3 API does not depend on the web app's own modules.
 */
import type { Config } from './config.js';

/**
 * The origins the web app is served from, which the S3 endpoint allows on
 * every bucket: the API's public base URL, and on a loopback host its other
 * loopback names (a browser may be pointed at localhost or 127.0.0.1).
 */
export function webAppOrigins(config: Config): string[] {
  const base = new URL(config.urls.baseUrl);
  const origins = [base.origin];
  const loopback = ['127.0.0.1', 'localhost', '[::1]'];
  if (loopback.includes(base.hostname)) {
    for (const name of loopback) {
      const other = new URL(base.origin);
      other.hostname = name;
      if (!origins.includes(other.origin)) origins.push(other.origin);
    }
  }
  return origins;
}
