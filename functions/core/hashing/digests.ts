/**
 * The digests an upload is checked against, by name: MD5 (S3's ETag) and
 * the flexible checksums (`x-amz-checksum-*`). Transport-free, so the
 * thread that hashes large uploads (hash-jobs.ts) computes them with the
 * same code as the request thread.
 */
import { createHash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { Crc32c, Crc64Nvme } from '@aws-sdk/checksums/crc';

export const DIGESTS = ['md5', 'crc32', 'crc32c', 'crc64nvme', 'sha1', 'sha256'] as const;
export type DigestName = (typeof DIGESTS)[number];

export interface Digest {
  update(chunk: Uint8Array): void;
  digest(): Promise<Uint8Array>;
}

export function createDigest(name: DigestName): Digest {
  switch (name) {
    case 'crc32': {
      let value = 0;
      return {
        update: (chunk) => void (value = crc32(chunk, value)),
        digest: async () => {
          const out = Buffer.alloc(4);
          out.writeUInt32BE(value >>> 0);
          return out;
        },
      };
    }
    case 'crc32c':
      return new Crc32c();
    case 'crc64nvme':
      return new Crc64Nvme();
    case 'md5':
    case 'sha1':
    case 'sha256': {
      const h = createHash(name);
      return { update: (chunk) => void h.update(chunk), digest: async () => h.digest() };
    }
  }
}
