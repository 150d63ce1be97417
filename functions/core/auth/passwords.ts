/**
 * Password hashes: scrypt from node:crypto, memory-hard, with its
 * parameters stored beside the hash so they can be raised later without
 * locking anyone out (an old hash still verifies with the parameters it
 * was made with, and is replaced on its next successful sign-in).
 *
 * The stored form is a PHC-style string:
 *
 *   $scrypt$ln=15,r=8,p=1$<salt, base64 no padding>$<key, base64 no padding>
 *
 * Current parameters: N = 2^15 (ln=15), r = 8, p = 1, a 16-byte salt and a
 * 32-byte key: the floor OWASP's Password Storage Cheat Sheet gives for
 * scrypt (https://cheatsheetseries.owasp.org/cheatsheets/Password_Storage_Cheat_Sheet.html),
 * 32 MiB of memory (128·N·r bytes) and some tens of milliseconds of one
 * core per hash. Node runs scrypt on its thread pool, so a hash never
 * holds the event loop.
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';

export interface ScryptParameters {
  /** log2 of N, the CPU and memory cost. */
  ln: number;
  r: number;
  p: number;
  /** Salt bytes. */
  saltBytes: number;
  /** Derived key bytes. */
  keyBytes: number;
}

export const PASSWORD_PARAMETERS: Readonly<ScryptParameters> = { ln: 15, r: 8, p: 1, saltBytes: 16, keyBytes: 32 };

/** Parameters past these are refused when read back: a stored hash must not be able to ask for gigabytes. */
const MAX = { ln: 20, r: 32, p: 16, keyBytes: 64, saltBytes: 64 };

function derive(password: string, salt: Buffer, keyBytes: number, params: Pick<ScryptParameters, 'ln' | 'r' | 'p'>): Promise<Buffer> {
  const N = 2 ** params.ln;
  // Node's default maxmem (32 MiB) is what N=2^15, r=8 needs exactly, which OpenSSL refuses: room for twice the need.
  const options: ScryptOptions = { N, r: params.r, p: params.p, maxmem: 2 * 128 * N * params.r + 1024 * 1024 };
  return new Promise((resolve, reject) =>
    scryptCallback(password.normalize('NFC'), salt, keyBytes, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

const b64 = (bytes: Buffer) => bytes.toString('base64').replace(/=+$/, '');

/** A new hash of the password, with a fresh salt, under `params` (the current ones unless a test or a migration says otherwise). */
export async function hashPassword(password: string, params: ScryptParameters = PASSWORD_PARAMETERS): Promise<string> {
  const salt = randomBytes(params.saltBytes);
  const key = await derive(password, salt, params.keyBytes, params);
  return `$scrypt$ln=${params.ln},r=${params.r},p=${params.p}$${b64(salt)}$${b64(key)}`;
}

/** A stored hash taken apart, or undefined when it is not one this module wrote (or asks for more than MAX). */
export function parsePasswordHash(stored: string): (ScryptParameters & { salt: Buffer; key: Buffer }) | undefined {
  const m = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,3}),p=(\d{1,3})\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/.exec(stored);
  if (!m) return undefined;
  const [ln, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const salt = Buffer.from(m[4]!, 'base64');
  const key = Buffer.from(m[5]!, 'base64');
  if (ln < 1 || ln > MAX.ln || r < 1 || r > MAX.r || p < 1 || p > MAX.p) return undefined;
  if (key.length < 16 || key.length > MAX.keyBytes || salt.length < 8 || salt.length > MAX.saltBytes) return undefined;
  return { ln, r, p, saltBytes: salt.length, keyBytes: key.length, salt, key };
}

/** Whether the password matches the stored hash, under the parameters stored with it; compared in constant time. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parsePasswordHash(stored);
  if (!parsed) return false;
  const key = await derive(password, parsed.salt, parsed.keyBytes, parsed);
  return timingSafeEqual(key, parsed.key);
}

/** Whether a stored hash was made with weaker parameters than the current ones (it is replaced on the next sign-in). */
export function needsRehash(stored: string, current: ScryptParameters = PASSWORD_PARAMETERS): boolean {
  const parsed = parsePasswordHash(stored);
  if (!parsed) return true;
  return (
    parsed.ln < current.ln ||
    parsed.r < current.r ||
    parsed.p < current.p ||
    parsed.saltBytes < current.saltBytes ||
    parsed.keyBytes < current.keyBytes
  );
}

let dummy: Promise<string> | undefined;
/**
 * A hash of no one's password, made once per process: a sign-in for an
 * e-mail that has no account verifies against it, so that it costs the
 * same scrypt work as a wrong password and the answer's timing does not
 * tell the two apart.
 */
export function dummyPasswordHash(): Promise<string> {
  return (dummy ??= hashPassword(randomBytes(16).toString('hex')).catch((err: unknown) => {
    dummy = undefined;
    throw err;
  }));
}

/** Passwords: at least this many characters (NIST SP 800-63B asks for 8 at least), at most the other, so a body cannot make scrypt read megabytes. */
export const PASSWORD_MIN_LENGTH = 10;
export const PASSWORD_MAX_LENGTH = 1000;
