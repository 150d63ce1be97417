/**
 * The web app's files on the API port (`/` and `/app/...`): not built yet (issue 23).
 */
import type { HttpRequest } from '../core/http/types.js';
import type { Services } from '../core/services.js';

export const isWebAppPath = (_rawPath: string): boolean => false;

export async function handleWebApp(_services: Services, _req: HttpRequest): Promise<Response> {
  return new Response('Not found', { status: 404 });
}
