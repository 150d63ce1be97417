/** Kubo's CID vectors (test/fixtures/cid-vectors.json, what `ipfs add` prints) and the bytes each file vector names. */
import { createCipheriv, createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

export interface Vector {
  name: string;
  kind: string;
  generator: string;
  size: number;
  cidV0: string;
  cidV1: string;
}

export const vectors = JSON.parse(readFileSync(new URL('../fixtures/cid-vectors.json', import.meta.url), 'utf8')) as Vector[];

export const fileVectors = vectors.filter((v) => v.kind === 'file');

export function vectorNamed(name: string): Vector {
  const v = vectors.find((x) => x.name === name);
  if (!v) throw new Error(`no CID vector named ${name}`);
  return v;
}

/** Rebuilds a vector's bytes from its generator: a literal text, or Kubo's ChaCha20 reader. */
export function bytesOf(v: Vector): Buffer {
  const text = /^new TextEncoder\(\)\.encode\((".*")\)$/.exec(v.generator);
  if (text) return Buffer.from(JSON.parse(text[1]!) as string);
  const chacha = /createHash\('sha256'\)\.update\((".*?")\)/.exec(v.generator);
  if (!chacha) throw new Error(`unknown generator for ${v.name}`);
  const key = createHash('sha256')
    .update(JSON.parse(chacha[1]!) as string)
    .digest();
  return createCipheriv('chacha20', key, Buffer.alloc(16)).update(Buffer.alloc(v.size));
}
