/**
 * A DNS server and an ACME CA of Let's Encrypt's own test tools (Debian's
 * `pebble` package): `pebble-challtestsrv` answers DNS from records the
 * test sets through its management API (and nothing else: no default
 * addresses), and `pebble` issues certificates after checking HTTP-01
 * challenges at the addresses that DNS gives, on the port it is told. Both
 * on loopback, on free ports, stopped by the test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Agent, request } from 'node:https';
import { freePort } from './service-env.js';

const run = promisify(execFile);

async function waitForPort(what: string, url: string, init: RequestInit & { agent?: Agent } = {}, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      await fetch(url, init);
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`${what} did not start in ${ms} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

function started(bin: string, args: string[], env: Record<string, string> = {}): { child: ChildProcess; output: () => string } {
  let output = '';
  const child = spawn(bin, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
  return { child, output: () => output };
}

async function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

export interface TestDns {
  /** `127.0.0.1:<port>`: what CAIRN_DNS_RESOLVER and pebble's -dnsserver are given. */
  address: string;
  addA(host: string, addresses: string[]): Promise<void>;
  clearA(host: string): Promise<void>;
  setCname(host: string, target: string): Promise<void>;
  clearCname(host: string): Promise<void>;
  setTxt(host: string, value: string): Promise<void>;
  clearTxt(host: string): Promise<void>;
  close(): Promise<void>;
}

export async function startTestDns(): Promise<TestDns> {
  const [dnsPort, managementPort] = [await freePort(), await freePort()];
  const { child, output } = started('/usr/bin/pebble-challtestsrv', [
    '-dns01',
    `127.0.0.1:${dnsPort}`,
    '-management',
    `127.0.0.1:${managementPort}`,
    '-http01',
    '',
    '-https01',
    '',
    '-tlsalpn01',
    '',
    '-defaultIPv4',
    '',
    '-defaultIPv6',
    '',
  ]);
  const base = `http://127.0.0.1:${managementPort}`;
  await waitForPort('pebble-challtestsrv', `${base}/`);
  const fqdn = (h: string) => (h.endsWith('.') ? h : `${h}.`);
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, { method: 'POST', body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`challtestsrv ${path} answered ${res.status}: ${await res.text()}\n${output()}`);
  };
  return {
    address: `127.0.0.1:${dnsPort}`,
    addA: (host, addresses) => post('/add-a', { host: fqdn(host), addresses }),
    clearA: (host) => post('/clear-a', { host: fqdn(host) }),
    setCname: (host, target) => post('/set-cname', { host: fqdn(host), target: fqdn(target) }),
    clearCname: (host) => post('/clear-cname', { host: fqdn(host) }),
    setTxt: (host, value) => post('/set-txt', { host: fqdn(host), value }),
    clearTxt: (host) => post('/clear-txt', { host: fqdn(host) }),
    close: () => stopped(child),
  };
}

export interface TestCa {
  /** The ACME directory URL (CAIRN_ACME_DIRECTORY). */
  directoryUrl: string;
  /** The PEM file of the CA of pebble's own HTTPS listener (CAIRN_ACME_CA_FILE). */
  caFile: string;
  /** Pebble's issuing root (made afresh at each start), which a client verifies the certificates it issues with. */
  root(): Promise<string>;
  output(): string;
  close(): Promise<void>;
}

/**
 * Pebble, checking HTTP-01 challenges on `httpPort` of the addresses `dns`
 * gives, without its random sleeps and nonce rejections (they test a
 * client's patience, not what this suite asks). Its own HTTPS certificate
 * is made here with openssl, under a CA of its own.
 */
export async function startTestCa(dns: TestDns, httpPort: number, env: Record<string, string> = {}): Promise<TestCa> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-pebble-'));
  const [acmePort, managementPort] = [await freePort(), await freePort()];
  const ca = join(dir, 'ca.pem');
  await run('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '2',
    '-subj', '/CN=pebble test CA', '-keyout', join(dir, 'ca.key'), '-out', ca,
  ]); // prettier-ignore
  await run('openssl', [
    'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=localhost',
    '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'req.csr'),
  ]); // prettier-ignore
  await writeFile(join(dir, 'ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  await run('openssl', [
    'x509', '-req', '-in', join(dir, 'req.csr'), '-CA', ca, '-CAkey', join(dir, 'ca.key'), '-CAcreateserial',
    '-days', '2', '-extfile', join(dir, 'ext.cnf'), '-out', join(dir, 'cert.pem'),
  ]); // prettier-ignore
  await writeFile(
    join(dir, 'config.json'),
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${acmePort}`,
        managementListenAddress: `127.0.0.1:${managementPort}`,
        certificate: join(dir, 'cert.pem'),
        privateKey: join(dir, 'key.pem'),
        httpPort,
        tlsPort: await freePort(),
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    }),
  );
  const { child, output } = started('/usr/bin/pebble', ['-config', join(dir, 'config.json'), '-dnsserver', dns.address, '-strict=false'], {
    PEBBLE_VA_NOSLEEP: '1',
    PEBBLE_WFE_NONCEREJECT: '0',
    PEBBLE_AUTHZREUSE: '0',
    ...env,
  });
  const agent = new Agent({ ca: await readFile(ca) });
  const get = (url: string) =>
    new Promise<string>((resolve, reject) => {
      request(url, { agent }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: ${res.statusCode} ${body}`))));
      })
        .on('error', reject)
        .end();
    });
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      await get(`https://127.0.0.1:${acmePort}/dir`);
      break;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`pebble did not start: ${(err as Error).message}\n${output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    directoryUrl: `https://127.0.0.1:${acmePort}/dir`,
    caFile: ca,
    root: () => get(`https://127.0.0.1:${managementPort}/roots/0`),
    output,
    async close() {
      await stopped(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
