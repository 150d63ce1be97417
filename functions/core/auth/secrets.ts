/**
 * Seals secrets at rest. Storage secrets must be recoverable (SigV4 signs
 * with the secret itself), so they are encrypted, not hashed: AES-256-GCM
 * with a configured key locally, KMS in AWS (functions/aws/kms-sealer.ts).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config.js';

export interface SecretSealer {
  seal(plaintext: string, context: string): Promise<string>;
  open(sealed: string, context: string): Promise<string>;
}

/** AES-256-GCM; `context` (e.g. the access key id) is bound as associated data. */
export function aesSealer(key: Buffer): SecretSealer {
  return {
    async seal(plaintext, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(context));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return `v1.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
    },
    async open(sealed, context) {
      if (!sealed.startsWith('v1.')) throw new Error('unknown sealed secret format');
      const raw = Buffer.from(sealed.slice(3), 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    },
  };
}

/** The configured key, else one generated once and kept (mode 0600) under the data directory. */
async function localKey(config: Config): Promise<Buffer> {
  if (config.secretKey) return config.secretKey;
  const path = join(config.dataDir, 'secret.key');
  try {
    const key = Buffer.from((await readFile(path, 'utf8')).trim(), 'base64');
    if (key.length === 32) return key;
    throw new Error(`${path} does not hold a 32-byte base64 key`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const key = randomBytes(32);
  await mkdir(config.dataDir, { recursive: true });
  await writeFile(path, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  return key;
}

/** AES-256-GCM with the configured key, or the one kept under the data directory. */
export async function localSealer(config: Config): Promise<SecretSealer> {
  return aesSealer(await localKey(config));
}
