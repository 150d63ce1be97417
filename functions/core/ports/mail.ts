/**
 * Sending e-mail: invitations and password reset links. One adapter sends
 * over SMTP (functions/adapters/smtp-mailer.ts, CAIRN_SMTP_URL); without
 * one configured, `noMail` sends nothing and says so, and the caller hands
 * the link to whoever may pass it on (an invitation's owner) or answers
 * that this service sends no mail (a password reset).
 *
 * Every message is checked here, whichever adapter sends it: the recipient
 * must be one plausible address and the subject one line, so no value a
 * user typed can add a header (a CR or LF in either would start one).
 */
import { isPlausibleEmail } from '../data/people.js';

export interface MailMessage {
  to: string;
  subject: string;
  /** Plain text; the links in it are the message's point. */
  text: string;
}

/** What a send came to: sent, or why not (the reason is for the logs and for an owner, never a secret). */
export type MailOutcome = { sent: true } | { sent: false; reason: string };

export interface Mailer {
  /** False where no mail can go out: the caller decides what to do with a link instead. */
  readonly configured: boolean;
  /** Sends the message; never throws (a failure is the outcome's reason, logged by the adapter). */
  send(message: MailMessage): Promise<MailOutcome>;
}

/** The longest subject sent: RFC 5322 asks lines of at most 78 characters, and a subject is one header line. */
export const SUBJECT_MAX_LENGTH = 200;

/** Why a message may not be sent as it is, or undefined when it may. */
export function mailProblem(message: MailMessage): string | undefined {
  if (typeof message.to !== 'string' || !isPlausibleEmail(message.to) || /[\r\n,;<>"]/.test(message.to))
    return 'the recipient must be one e-mail address';
  if (typeof message.subject !== 'string' || message.subject === '' || message.subject.length > SUBJECT_MAX_LENGTH)
    return `the subject must be 1 to ${SUBJECT_MAX_LENGTH} characters`;
  if (/[\u0000-\u001f\u007f]/.test(message.subject)) return 'the subject must be one line, without control characters';
  return undefined;
}

/** The mailer of a service with no SMTP server configured. */
export const noMail: Mailer = {
  configured: false,
  send: async () => ({ sent: false, reason: 'this service sends no e-mail (CAIRN_SMTP_URL is not set)' }),
};
