/**
 * A real SMTP server for the tests (the `smtp-server` package) on a
 * loopback port: it wants the user and password the service is given
 * (AUTH PLAIN or LOGIN, without TLS on loopback), keeps every message it
 * takes, parsed by `mailparser`, and refuses recipients the test names
 * (a mail server that will not deliver). `url` is the service's
 * CAIRN_SMTP_URL.
 */
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { freePort } from './service-env.js';

export interface TestSmtp {
  url: string;
  /** Every message taken, in order, with its envelope. */
  messages: Array<{ from: string; to: string[]; mail: ParsedMail; raw: string }>;
  /** Recipients answered 550 (no such mailbox). */
  refuse: Set<string>;
  /** The next message to `to` (taken from now on, or already taken and not yet handed out). */
  next(to: string, timeoutMs?: number): Promise<{ mail: ParsedMail; raw: string; from: string }>;
  /** The first https? link in a message's text. */
  linkIn(mail: ParsedMail): string;
  close(): Promise<void>;
}

export const SMTP_USER = 'cairn-mail';
export const SMTP_PASSWORD = 'smtp pass: with @ and /';

export async function startSmtp(): Promise<TestSmtp> {
  const messages: TestSmtp['messages'] = [];
  const handed = new Set<number>();
  const refuse = new Set<string>();
  const waiters: Array<() => void> = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authMethods: ['PLAIN', 'LOGIN'],
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === SMTP_USER && auth.password === SMTP_PASSWORD) callback(null, { user: auth.username });
      else callback(new Error('535 authentication failed'));
    },
    onRcptTo(address, _session, callback) {
      if (refuse.has(address.address.toLowerCase())) {
        const err = new Error('no such mailbox') as Error & { responseCode: number };
        err.responseCode = 550;
        return callback(err);
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        simpleParser(raw).then(
          (mail) => {
            messages.push({
              from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
              to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
              mail,
              raw,
            });
            waiters.splice(0).forEach((w) => w());
            callback();
          },
          (err: Error) => callback(err),
        );
      });
    },
  });
  const port = await freePort();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    url: `smtp://${SMTP_USER}:${encodeURIComponent(SMTP_PASSWORD)}@127.0.0.1:${port}`,
    messages,
    refuse,
    async next(to, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const i = messages.findIndex((m, n) => !handed.has(n) && m.to.includes(to.toLowerCase()));
        if (i >= 0) {
          handed.add(i);
          return { mail: messages[i]!.mail, raw: messages[i]!.raw, from: messages[i]!.from };
        }
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no message to ${to} arrived in ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
    linkIn(mail) {
      const m = /https?:\/\/\S+/.exec(mail.text ?? '');
      if (!m) throw new Error(`no link in: ${mail.text}`);
      return m[0];
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
