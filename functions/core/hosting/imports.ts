/**
 * The CAR import endpoint (`/imports/...`): not built yet (issue 23).
 */
import type { HttpRequest } from '../http/types.js';
import type { Services } from '../services.js';

export const isImportPath = (rawPath: string): boolean => rawPath.startsWith('/imports/');

export async function handleImport(_services: Services, req: HttpRequest): Promise<Response> {
  await req.body?.cancel().catch(() => {});
  return new Response(JSON.stringify({ ok: false, error: 'not found' }), { status: 404, headers: { 'content-type': 'application/json; charset=utf-8' } });
}
