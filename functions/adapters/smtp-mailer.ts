/**
 * The mail port over SMTP, with nodemailer: `CAIRN_SMTP_URL` names the
 * server (`smtp://user:password@host:587`: STARTTLS when the server offers
 * it; `smtps://...:465`: TLS from the first byte), `CAIRN_MAIL_FROM` the
 * sender. The same adapter serves both compositions (the local server and
 * a Lambda function reach an SMTP server alike), so it sits beside them
 * (functions/adapters/stores.ts says why). nodemailer is imported with the
 * first message, so a function that sends none never loads it.
 *
 * The server is the operator's, not an address a user chose, so it does
 * not go through the outbound policy (functions/core/net/outbound.ts).
 * Timeouts are short: a request that sends mail (an invitation) waits for
 * it, and an SMTP server that does not answer must not hold it for
 * nodemailer's default of minutes. A failure is logged (without the
 * message's text, which holds a one-time link) and returned as the outcome,
 * never thrown: nothing waiting on a send can crash the process.
 */
import type { Transporter } from 'nodemailer';
import type { Config } from '../core/config.js';
import type { Logger } from '../core/logger.js';
import { mailProblem, noMail, type Mailer } from '../core/ports/mail.js';

const TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

export function smtpMailer(mail: Config['mail'], logger: Logger): Mailer {
  const smtp = mail.smtp;
  if (!smtp) return noMail;
  let transport: Promise<Transporter> | undefined;
  const open = () =>
    (transport ??= import('nodemailer').then(({ default: nodemailer }) =>
      nodemailer.createTransport({
        host: smtp.host,
        port: smtp.port,
        secure: smtp.secure,
        auth: smtp.user !== undefined ? { user: smtp.user, pass: smtp.password ?? '' } : undefined,
        ...TIMEOUTS,
      }),
    ));
  return {
    configured: true,
    async send(message) {
      const problem = mailProblem(message);
      if (problem) {
        logger.warn('a message was not sent', { reason: problem });
        return { sent: false, reason: problem };
      }
      try {
        await (await open()).sendMail({ from: mail.from, to: message.to, subject: message.subject, text: message.text });
        return { sent: true };
      } catch (err) {
        transport = undefined;
        logger.error('a message could not be sent', {
          server: `${smtp.host}:${smtp.port}`,
          subject: message.subject,
          reason: (err as Error).message,
        });
        // The server's name and answer are the operator's to read (in the log), not whoever asked for the message.
        return { sent: false, reason: "the mail server did not take the message (the service's log says why)" };
      }
    },
  };
}
