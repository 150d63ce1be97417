/**
 * Secrets sealed by the stack's KMS key (CAIRN_KMS_KEY_ID), and the choice
 * between it and the local AES key every entry point makes.
 */
import type { Config } from '../core/config.js';
import { localSealer, type SecretSealer } from '../core/auth/secrets.js';

/** KMS Encrypt/Decrypt (secrets are tiny); decrypted values are cached per container. */
export async function kmsSealer(keyId: string, region: string): Promise<SecretSealer> {
  const { KMSClient, EncryptCommand, DecryptCommand } = await import('@aws-sdk/client-kms');
  const kms = new KMSClient({ region });
  const cache = new Map<string, string>();
  return {
    async seal(plaintext, context) {
      const out = await kms.send(
        new EncryptCommand({
          KeyId: keyId,
          Plaintext: Buffer.from(plaintext),
          EncryptionContext: { cairn: context },
        }),
      );
      return `kms.${Buffer.from(out.CiphertextBlob!).toString('base64')}`;
    },
    async open(sealed, context) {
      const hit = cache.get(sealed);
      if (hit !== undefined) return hit;
      if (!sealed.startsWith('kms.')) throw new Error('unknown sealed secret format');
      const out = await kms.send(
        new DecryptCommand({
          CiphertextBlob: Buffer.from(sealed.slice(4), 'base64'),
          EncryptionContext: { cairn: context },
        }),
      );
      const plain = Buffer.from(out.Plaintext!).toString('utf8');
      cache.set(sealed, plain);
      return plain;
    },
  };
}

/** KMS when the stack gave a key and no local key overrides it; AES-256-GCM otherwise (core/auth/secrets.ts). */
export async function createSealer(config: Config): Promise<SecretSealer> {
  if (config.kmsKeyId && !config.secretKey) return kmsSealer(config.kmsKeyId, config.region);
  return localSealer(config);
}
