/**
 * Password hashes (scrypt with its parameters stored beside it) and the
 * session cookie's rules: when it is Secure, and the CSRF token that goes
 * with a session.
 */
import {
  hashPassword,
  needsRehash,
  parsePasswordHash,
  PASSWORD_PARAMETERS,
  verifyPassword,
  dummyPasswordHash,
} from '../../functions/core/auth/passwords.js';
import {
  clearedSessionCookie,
  cookieIsSecure,
  csrfTokenFor,
  csrfTokenMatches,
  sessionCookie,
  sessionSecretFrom,
} from '../../functions/core/auth/session-cookie.js';
import { isPlausibleEmail, normaliseEmail } from '../../functions/core/data/people.js';

describe('password hashes', () => {
  test('the stored form names scrypt and its parameters (N=2^15, r=8, p=1), a 16-byte salt and a 32-byte key', async () => {
    const stored = await hashPassword('a password of some length');
    expect(stored).toMatch(/^\$scrypt\$ln=15,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
    expect(parsePasswordHash(stored)).toMatchObject({ ln: 15, r: 8, p: 1, saltBytes: 16, keyBytes: 32 });
    expect(PASSWORD_PARAMETERS).toEqual({ ln: 15, r: 8, p: 1, saltBytes: 16, keyBytes: 32 });
    // A fresh salt each time: the same password never hashes the same.
    expect(await hashPassword('a password of some length')).not.toBe(stored);
  });

  test('verifies the password, and nothing else', async () => {
    const stored = await hashPassword('correct horse battery staple');
    expect(await verifyPassword('correct horse battery staple', stored)).toBe(true);
    for (const wrong of ['Correct horse battery staple', 'correct horse battery staple ']) {
      expect(await verifyPassword(wrong, stored)).toBe(false);
    }
    // One key bit changed in the stored hash: refused.
    const parts = stored.split('$');
    const key = Buffer.from(parts[4]!, 'base64');
    key[0]! ^= 1;
    parts[4] = key.toString('base64').replace(/=+$/, '');
    expect(await verifyPassword('correct horse battery staple', parts.join('$'))).toBe(false);
  });

  test('a hash made with other parameters still verifies, and is marked for replacing when they are weaker', async () => {
    const older = await hashPassword('an older password', { ln: 14, r: 8, p: 1, saltBytes: 16, keyBytes: 32 });
    expect(older).toMatch(/^\$scrypt\$ln=14,r=8,p=1\$/);
    expect(await verifyPassword('an older password', older)).toBe(true);
    expect(await verifyPassword('another password', older)).toBe(false);
    expect(needsRehash(older)).toBe(true);
    expect(needsRehash(await hashPassword('today'))).toBe(false);
    // Stronger than today's: verifies, and is kept.
    const stronger = await hashPassword('stronger', { ln: 15, r: 8, p: 2, saltBytes: 16, keyBytes: 32 });
    expect(await verifyPassword('stronger', stronger)).toBe(true);
    expect(needsRehash(stronger)).toBe(false);
  });

  test('a stored value that is not such a hash, or asks for absurd work, verifies nothing', async () => {
    const salt = Buffer.alloc(16).toString('base64').replace(/=+$/, '');
    const key = Buffer.alloc(32).toString('base64').replace(/=+$/, '');
    for (const stored of [
      '',
      'plaintext',
      `$scrypt$ln=31,r=8,p=1$${salt}$${key}`,
      `$scrypt$ln=15,r=8,p=1$${salt}$AAAA`,
      `$argon2id$v=19$${salt}$${key}`,
    ]) {
      expect(parsePasswordHash(stored)).toBeUndefined();
      expect(await verifyPassword('anything', stored)).toBe(false);
      expect(needsRehash(stored)).toBe(true);
    }
  });

  test('the dummy hash an unknown e-mail is checked against is made once, with the current parameters', async () => {
    const dummy = await dummyPasswordHash();
    expect(await dummyPasswordHash()).toBe(dummy);
    expect(needsRehash(dummy)).toBe(false);
  });
});

describe('e-mail addresses', () => {
  test('normalised: trimmed and in lower case', () => {
    expect(normaliseEmail('  Ada.Lovelace@Example.ORG\t')).toBe('ada.lovelace@example.org');
  });

  test('plausible: one @, a dot in the domain, no spaces', () => {
    expect(isPlausibleEmail('a@b.co')).toBe(true);
    for (const bad of ['a', 'a@b', '@b.co', 'a@@b.co', 'a b@c.de', `${'x'.repeat(250)}@b.co`, 'a@b.co\n'])
      expect(isPlausibleEmail(bad)).toBe(false);
  });
});

describe('the session cookie', () => {
  const at = (baseUrl: string) => ({ urls: { baseUrl } }) as Parameters<typeof cookieIsSecure>[0];

  test('is Secure unless the base URL is http on a loopback address', () => {
    for (const url of ['http://127.0.0.1:4000', 'http://127.8.9.10', 'http://localhost:4000', 'http://app.localhost', 'http://[::1]:4000'])
      expect([url, cookieIsSecure(at(url))]).toEqual([url, false]);
    for (const url of [
      'https://127.0.0.1:4000',
      'https://cairn.example.com',
      'http://cairn.example.com',
      'http://10.0.0.5:4000',
      'http://[::2]',
    ])
      expect([url, cookieIsSecure(at(url))]).toEqual([url, true]);
  });

  test('HttpOnly, SameSite=Lax, Path=/ always; __Host- named with Secure; cleared with Max-Age=0', () => {
    expect(sessionCookie(at('https://cairn.example.com'), 's1.x')).toBe(
      '__Host-cairn_session=s1.x; Path=/; Max-Age=2592000; HttpOnly; SameSite=Lax; Secure',
    );
    expect(sessionCookie(at('http://127.0.0.1:4000'), 's1.x')).toBe('cairn_session=s1.x; Path=/; Max-Age=2592000; HttpOnly; SameSite=Lax');
    expect(clearedSessionCookie(at('https://cairn.example.com'))).toBe(
      '__Host-cairn_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax; Secure',
    );
  });

  test('is read from a Cookie header by its own name only', () => {
    const local = at('http://127.0.0.1:4000');
    expect(sessionSecretFrom(local, 'theme=dark; cairn_session=s1.abc; other=1')).toBe('s1.abc');
    expect(sessionSecretFrom(local, '__Host-cairn_session=s1.abc')).toBeUndefined();
    expect(sessionSecretFrom(at('https://cairn.example.com'), 'cairn_session=s1.abc')).toBeUndefined();
    expect(sessionSecretFrom(local, undefined)).toBeUndefined();
  });

  test("the CSRF token is the session's own, and is compared whole", () => {
    const token = csrfTokenFor('s1.one');
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(csrfTokenFor('s1.one')).toBe(token);
    expect(csrfTokenFor('s1.two')).not.toBe(token);
    expect(csrfTokenMatches('s1.one', token)).toBe(true);
    for (const sent of [csrfTokenFor('s1.two'), token.slice(0, -1), `${token}x`, '', null, undefined])
      expect(csrfTokenMatches('s1.one', sent)).toBe(false);
  });
});
