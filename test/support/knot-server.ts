/**
 * An authoritative DNS server that takes RFC 2136 updates signed with
 * TSIG: Debian's `knot` (knotd), started with a configuration written
 * here, on a free loopback port, serving the zones asked for (each from a
 * zone file with its SOA and NS) and letting the one key update them.
 * Also a plain resolver's view: `txt(name)` asks it over UDP with Node's
 * resolver, as any client would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Resolver } from 'node:dns/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './service-env.js';

export interface KnotServer {
  /** `127.0.0.1:<port>`: CAIRN_DNSLINK_SERVER, and CAIRN_DNS_RESOLVER for lookups of its zones. */
  address: string;
  /** `name:hmac-sha256:<base64>`: CAIRN_DNSLINK_TSIG. */
  tsig: string;
  /** Each TXT record of `name`, its strings joined; none when it has none. */
  txt(name: string): Promise<string[]>;
  output(): string;
  /** Stops the server (its port then refuses connections), keeping its configuration. */
  stop(): Promise<void>;
  /** Starts it again on the same port, its zones as their files have them (what updates wrote is gone). */
  start(): Promise<void>;
  /** Rewrites the zones' files with these static records (as `startKnot` takes them) and restarts the server on them. */
  setRecords(records: string[]): Promise<void>;
  close(): Promise<void>;
}

/** Static records to put in a zone's file, as zone-file lines (`name TTL IN TYPE data`). */
export async function startKnot(zones: string[], records: string[] = []): Promise<KnotServer> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-knot-'));
  const port = await freePort();
  const secret = randomBytes(32).toString('base64');
  const keyName = 'cairn-test-key';
  let serial = 0;
  const writeZones = async (wanted: string[]) => {
    serial++;
    for (const zone of zones) {
      const own = wanted.filter((r) => r.split(/\s+/)[0]!.replace(/\.$/, '').endsWith(zone));
      await writeFile(
        join(dir, `${zone}.zone`),
        [
          `$ORIGIN ${zone}.`,
          '$TTL 300',
          `@ IN SOA ns.${zone}. hostmaster.${zone}. ${serial} 3600 600 86400 60`,
          `@ IN NS ns.${zone}.`,
          'ns IN A 127.0.0.1',
          ...own,
          '',
        ].join('\n'),
      );
    }
  };
  await writeZones(records);
  await writeFile(
    join(dir, 'knot.conf'),
    [
      'server:',
      `  rundir: "${dir}"`,
      `  listen: 127.0.0.1@${port}`,
      'log:',
      '  - target: stderr',
      '    any: info',
      'database:',
      `  storage: "${dir}"`,
      'key:',
      `  - id: ${keyName}`,
      '    algorithm: hmac-sha256',
      `    secret: ${secret}`,
      'acl:',
      '  - id: cairn-update',
      `    key: ${keyName}`,
      '    action: update',
      'template:',
      '  - id: default',
      `    storage: "${dir}"`,
      '    file: "%s.zone"',
      '    acl: cairn-update',
      '    zonefile-sync: -1',
      '    zonefile-load: whole',
      '    journal-content: none',
      'zone:',
      ...zones.map((z) => `  - domain: ${z}`),
      '',
    ].join('\n'),
  );
  let output = '';
  let child: ChildProcess | undefined;
  const resolver = new Resolver({ timeout: 1000, tries: 1 });
  resolver.setServers([`127.0.0.1:${port}`]);
  const txt = async (name: string) => {
    try {
      return (await resolver.resolveTxt(name)).map((chunks) => chunks.join(''));
    } catch (err) {
      if (['ENODATA', 'ENOTFOUND'].includes((err as NodeJS.ErrnoException).code ?? '')) return [];
      throw err;
    }
  };
  const start = async () => {
    const running = spawn('/usr/sbin/knotd', ['-c', join(dir, 'knot.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = running;
    running.stdout!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
    running.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
    const deadline = Date.now() + 15_000;
    for (;;) {
      try {
        await resolver.resolveSoa(zones[0]!);
        return;
      } catch (err) {
        if (running.exitCode !== null || Date.now() > deadline)
          throw new Error(`knotd did not start: ${(err as Error).message}\n${output}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGTERM');
    });
  };
  await start();
  return {
    address: `127.0.0.1:${port}`,
    tsig: `${keyName}:hmac-sha256:${secret}`,
    txt,
    output: () => output,
    stop,
    start,
    async setRecords(wanted) {
      await stop();
      await writeZones(wanted);
      await start();
    },
    async close() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
