/** Loads schema.graphql: beside the bundle in Lambda (CAIRN_SCHEMA_PATH), at the repository root locally. */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export function schemaPath(env: Record<string, string | undefined> = process.env): string {
  if (env.CAIRN_SCHEMA_PATH) return env.CAIRN_SCHEMA_PATH;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'schema.graphql');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('schema.graphql not found; set CAIRN_SCHEMA_PATH');
    dir = parent;
  }
}

export function loadTypeDefs(): string {
  return readFileSync(schemaPath(), 'utf8');
}
