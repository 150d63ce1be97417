/**
 * Who asks to sign in, what the sign-in steps need, and what they answer:
 * shared by the password step (sign-in.ts) and the passkey step
 * (passkeys.ts), each of which calls the other's rules no more.
 */
import type { Account } from '../data/accounts.js';
import type { AttemptKey } from '../data/sign-in-attempts.js';
import type { Session } from '../data/sessions.js';
import type { Services } from '../services.js';
import type { InvitationServices } from './invitations.js';

export type AuthServices = Pick<
  Services,
  'accounts' | 'config' | 'logger' | 'passkeys' | 'people' | 'recoveryCodes' | 'sessions' | 'signInAttempts'
> &
  InvitationServices;

/** Who is asking, as the door sees them: kept with the session (the list of one's sessions shows them) and counted against. */
export interface ClientInfo {
  address?: string | null;
  userAgent?: string | null;
}

export interface SignedIn {
  kind: 'signed-in';
  account: Account;
  email: string;
  session: Session;
  /** The session's secret: the cookie's value, here once. */
  secret: string;
}

export type AuthRefusal =
  /** The input is not acceptable; `field` names what to fix. */
  | { kind: 'invalid'; message: string; field: string }
  /** Sign-up is not open here. */
  | { kind: 'closed'; message: string }
  /** The e-mail or the password is wrong (which, is not said). */
  | { kind: 'wrong'; message: string }
  /** Too many failures: try again in `retryAfter` seconds. */
  | { kind: 'locked'; message: string; retryAfter: number };

export const addressKey = (client: ClientInfo): AttemptKey[] => (client.address ? [{ scope: 'address', value: client.address }] : []);

export function locked(retryAfter: number): AuthRefusal {
  return {
    kind: 'locked',
    message: `Too many failed sign-ins: try again in ${Math.ceil(retryAfter / 60)} minute${retryAfter > 60 ? 's' : ''}`,
    retryAfter,
  };
}
