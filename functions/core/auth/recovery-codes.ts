/**
 * Recovery codes: ten one-time codes that stand in for a passkey at the
 * second step of a sign-in (data/recovery-codes.ts keeps their digests).
 * The HTTP side is graphql/recovery-codes-http.ts.
 *
 * - A code is 80 random bits, written as 16 characters of Crockford's
 *   base32 (digits and lower-case letters without i, l, o, u) in four
 *   groups: `7k2m-q9xa-c4th-w0np`. Typed, it is read leniently: any case,
 *   with or without hyphens and spaces, o for 0 and i or l for 1.
 * - Codes are shown once, when made; making codes replaces every code the
 *   account had.
 * - A code is given with the second step's challenge, the one the right
 *   password was answered with (its 401 with `"secondFactor": "passkey"`):
 *   that challenge proves the password, lasts five minutes, and is taken
 *   by the one request that uses it, right or wrong, as a passkey's answer
 *   takes it. So each guess at a code costs a right password, and every
 *   wrong one counts as a failed sign-in of the e-mail and the address
 *   (the same lock-out as a wrong password or passkey).
 */
import { randomBytes } from 'node:crypto';
import { RECOVERY_CODE_LIMITS, recoveryCodeDigest } from '../data/recovery-codes.js';
import type { AttemptKey } from '../data/sign-in-attempts.js';
import { addressKey, locked, type AuthRefusal, type AuthServices, type ClientInfo, type SignedIn } from './sign-in.js';

/** Crockford's base32 alphabet, in lower case: no i, l, o or u to misread. */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** One new code: 10 random bytes (80 bits), 5 bits a character, in groups of four. */
export function newRecoveryCode(): string {
  const bytes = randomBytes(10);
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return out.match(/.{4}/g)!.join('-');
}

/** A typed code as its 16 characters (case, hyphens and spaces dropped, look-alikes read as Crockford does), or undefined. */
export function normaliseRecoveryCode(input: unknown): string | undefined {
  if (typeof input !== 'string' || input.length > 64) return undefined;
  const code = input
    .toLowerCase()
    .replace(/[\s-]+/g, '')
    .replace(/o/g, '0')
    .replace(/[il]/g, '1');
  if (code.length !== RECOVERY_CODE_LIMITS.length) return undefined;
  for (const c of code) if (!ALPHABET.includes(c)) return undefined;
  return code;
}

/** Makes the account's codes, in place of any it had: the codes, here once. */
export async function makeRecoveryCodes(
  services: Pick<AuthServices, 'recoveryCodes'>,
  accountId: string,
): Promise<{ codes: string[]; createdAt: string }> {
  const codes = Array.from({ length: RECOVERY_CODE_LIMITS.count }, newRecoveryCode);
  const digests = codes.map((code) => recoveryCodeDigest(accountId, normaliseRecoveryCode(code)!));
  const { createdAt } = await services.recoveryCodes.replace(accountId, digests);
  return { codes, createdAt };
}

export const RECOVERY_CODE_STALE = 'This sign-in has expired (5 minutes) or was finished already: enter your password again';
export const RECOVERY_CODE_WRONG = 'This recovery code is not right, or was used already: enter your password again and try another';

/**
 * Signs in with a recovery code, given with the second step's challenge
 * (the options of /auth/sign-in's 401). The same session as a password's.
 */
export async function recoveryCodeSignIn(
  services: AuthServices,
  input: { challenge?: unknown; code?: unknown },
  client: ClientInfo,
): Promise<SignedIn | AuthRefusal> {
  const addressKeys = addressKey(client);
  const wait = await services.signInAttempts.retryAfter(addressKeys);
  if (wait > 0) return locked(wait);
  if (typeof input.challenge !== 'string' || !/^[A-Za-z0-9_-]{1,256}$/.test(input.challenge)) {
    await services.signInAttempts.fail(addressKeys);
    return { kind: 'invalid', message: 'challenge must be the one the password step answered with', field: 'challenge' };
  }
  if (typeof input.code !== 'string' || input.code.length > 64) {
    await services.signInAttempts.fail(addressKeys);
    return { kind: 'invalid', message: 'code must be one of your recovery codes', field: 'code' };
  }
  const taken = await services.passkeys.takeChallenge(input.challenge, ['second-factor']);
  if (!taken?.accountId) {
    await services.signInAttempts.fail(addressKeys);
    return { kind: 'wrong', message: RECOVERY_CODE_STALE };
  }
  const accountId = taken.accountId;
  const email = await services.people.emailOf(accountId);
  const keys: AttemptKey[] = [...(email ? [{ scope: 'email' as const, value: email }] : []), ...addressKeys];
  const emailWait = await services.signInAttempts.retryAfter(keys);
  if (emailWait > 0) return locked(emailWait);
  const code = normaliseRecoveryCode(input.code);
  // Used up in one conditional write: of two requests with one code, one signs in.
  if (!code || !(await services.recoveryCodes.use(accountId, recoveryCodeDigest(accountId, code)))) {
    services.logger.info('a recovery code was refused', { accountId });
    await services.signInAttempts.fail(keys);
    return { kind: 'wrong', message: RECOVERY_CODE_WRONG };
  }
  const account = await services.accounts.getAccount(accountId);
  if (!account) return { kind: 'wrong', message: RECOVERY_CODE_WRONG };
  services.logger.info('signed in with a recovery code', { accountId });
  if (email) await services.signInAttempts.clear(keys[0]!);
  const { session, secret } = await services.sessions.create(account.id, client);
  return { kind: 'signed-in', account, email: email ?? '', session, secret };
}
