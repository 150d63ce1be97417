/**
 * The local BuildRunner with real builds: real sh, real files, real
 * bubblewrap and slirp4netns (npm test's pretest installs them). What a
 * build may see, touch and connect to, what it is given, and that nothing
 * of it outlives its end.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { homedir, networkInterfaces, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ROOT } from '../support/child-service.js';
import { BwrapRunner, type BwrapRunnerOptions } from '../../functions/local/bwrap-runner.js';
import { BuildRefused, type BuildRequest, type BuildResult } from '../../functions/core/ports/build-runner.js';
import { variantsFor } from '../support/test-set.js';

const made: string[] = [];
const markers: string[] = [];
afterAll(async () => {
  // Should a test fail, what its build left running must not outlive the run.
  for (const m of markers) {
    for (const line of await processesWith(m)) process.kill(Number(line.split(':')[0]), 'SIGKILL');
  }
  await Promise.all(made.map((d) => rm(d, { recursive: true, force: true })));
});

async function tempDir(prefix: string, parent = tmpdir()): Promise<string> {
  await mkdir(parent, { recursive: true });
  const dir = await realpath(await mkdtemp(join(parent, prefix)));
  made.push(dir);
  return dir;
}

/** Outside /tmp, which the sandbox hides anyway: a data directory there would prove nothing. */
const dataParent = join(ROOT, '.tmp');

/** A unique string: in a command (`sleep <marker>`) it marks the build's processes in the host's process list. */
function marker(): string {
  const m = `${300 + Math.floor(Math.random() * 1000)}.${randomBytes(3).readUIntBE(0, 3)}`;
  markers.push(m);
  return m;
}

/** The host's processes whose command line contains text (from /proc: every pid namespace shows there). */
async function processesWith(text: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(text)) found.push(`${pid}: ${cmdline.replaceAll('\0', ' ')}`);
  }
  return found;
}

/**
 * A build that waits for the test: the sandbox shows a build no file of
 * this machine's to wait for (and its checkout through an overlay, where
 * what the host writes meanwhile need not show), so the test signals its
 * shell instead (letGo).
 */
const WAIT_FOR_GO = `trap 'go=1' USR1; go=`;
const UNTIL_GO = 'while [ -z "$go" ]; do sleep 0.02; done';

/** SIGUSR1 to the build's shell, the process running `command` (in any pid namespace: /proc shows them all). */
async function letGo(command: string): Promise<void> {
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline === `/bin/sh\0-c\0${command}\0`) process.kill(Number(pid), 'SIGUSR1');
  }
}

type Build = Partial<Omit<BuildRequest, 'onOutput'>> & { onOutput?: (text: string, sofar: string) => void };

async function build(
  runner: BwrapRunner,
  command: string,
  extra: Build = {},
): Promise<{ result: BuildResult; output: string; checkout: string }> {
  const checkout = extra.checkout ?? (await tempDir('cairn-checkout-'));
  let output = '';
  const result = await runner.run({
    deployId: 'd-test',
    checkout,
    directory: '',
    env: {},
    timeoutMs: 30_000,
    signal: new AbortController().signal,
    ...extra,
    command,
    onOutput: (text) => {
      output += text;
      extra.onOutput?.(text, output);
    },
  });
  return { result, output, checkout };
}

describe.each(variantsFor(['bwrap', 'none'] as const))('builds with sandbox=%s', (sandbox) => {
  const runner = new BwrapRunner({ sandbox, hide: [] });

  test('the command runs in the base directory and may write there', async () => {
    const checkout = await tempDir('cairn-checkout-');
    await mkdir(join(checkout, 'site/app'), { recursive: true });
    const { result, output } = await build(runner, 'pwd && echo built > out.txt', { checkout, directory: 'site/app' });
    expect(result).toEqual({ outcome: 'succeeded', exitCode: 0 });
    expect(output).toBe(`${checkout}/site/app\n`);
    expect(await readFile(join(checkout, 'site/app/out.txt'), 'utf8')).toBe('built\n');
  });

  test('a base directory outside the checkout, or missing, fails the build without running it', async () => {
    for (const directory of ['..', 'missing']) {
      const { result, output } = await build(runner, 'echo ran', { directory });
      expect(result.outcome).toBe('failed');
      expect(output).toContain(`"${directory}" is not a directory in the repository`);
      expect(output).not.toContain('ran');
    }
  });

  test("the environment is the request's plus HOME and a PATH with Node, nothing of the service's", async () => {
    const planted = {
      CAIRN_SECRET_KEY: 'f'.repeat(64),
      AWS_SECRET_ACCESS_KEY: 'aws-secret',
      AWS_REGION: 'eu-west-1',
      CAIRN_BOOTSTRAP_API_TOKEN: 'bootstrap-token',
      CAIRN_TEST_ONLY_VARIABLE: 'from the test process',
    };
    Object.assign(process.env, planted);
    try {
      const env = { CI: 'true', CAIRN_DEPLOY_ID: 'd-test', BRANCH: 'main', SITE_VAR: 'a value with spaces' };
      const { result, output } = await build(runner, 'env', { env });
      expect(result.outcome).toBe('succeeded');
      const seen = Object.fromEntries(
        output
          .trim()
          .split('\n')
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      );
      // PWD is the shell's own.
      expect(Object.keys(seen).sort()).toEqual([...Object.keys(env), 'HOME', 'PATH', 'PWD'].sort());
      expect(seen).toMatchObject(env);
      expect(seen.PATH!.split(':')).toEqual([dirname(process.execPath), '/usr/local/bin', '/usr/bin', '/bin']);
      expect(output).not.toMatch(/CAIRN_SECRET_KEY|AWS_|CAIRN_BOOTSTRAP|CAIRN_TEST_ONLY/);
    } finally {
      for (const k of Object.keys(planted)) delete process.env[k];
    }
  });

  test('HOME is a writable directory', async () => {
    const { result, output } = await build(runner, 'echo x > "$HOME/.npmrc" && cat "$HOME/.npmrc" && echo "$HOME"');
    expect(result.outcome).toBe('succeeded');
    const home = output.trim().split('\n')[1]!;
    expect(output.startsWith('x\n')).toBe(true);
    if (sandbox === 'none') expect(existsSync(home)).toBe(false); // a temporary directory, removed after the build
  });

  test('Node is on PATH', async () => {
    const { result, output } = await build(runner, `node -e 'console.log(process.version)'`);
    expect(result.outcome).toBe('succeeded');
    expect(output).toBe(`${process.version}\n`);
  });

  test('stdout and stderr arrive as one log, in order, while the build still runs', async () => {
    // The build waits for the test, which lets it go only once it has seen the first lines: a runner that held output back would time out.
    const command = `${WAIT_FOR_GO}; echo one; echo two >&2; echo three; ${UNTIL_GO}; echo four >&2`;
    const { result, output } = await build(runner, command, {
      timeoutMs: 20_000,
      onOutput: (_text, sofar) => {
        if (sofar === 'one\ntwo\nthree\n') void letGo(command);
      },
    });
    expect(result.outcome).toBe('succeeded');
    expect(output).toBe('one\ntwo\nthree\nfour\n');
  });

  test('megabytes of output are passed on in pieces, not gathered', async () => {
    const size = 24 * 1024 * 1024;
    let total = 0;
    let largest = 0;
    let pieces = 0;
    const checkout = await tempDir('cairn-checkout-');
    const result = await runner.run({
      deployId: 'd-big',
      checkout,
      directory: '',
      command: `head -c ${size} /dev/zero | tr '\\0' x; echo`,
      env: {},
      timeoutMs: 30_000,
      signal: new AbortController().signal,
      onOutput: (text) => {
        total += text.length;
        largest = Math.max(largest, text.length);
        pieces++;
      },
    });
    expect(result.outcome).toBe('succeeded');
    expect(total).toBe(size + 1);
    expect(largest).toBeLessThanOrEqual(1024 * 1024);
    expect(pieces).toBeGreaterThan(24);
  });

  test('a non-zero exit fails the build with its code; a signal is named', async () => {
    expect((await build(runner, 'echo bad >&2; exit 3')).result).toEqual({ outcome: 'failed', exitCode: 3 });
    const killed = (await build(runner, 'kill -KILL $$')).result;
    expect(killed.outcome).toBe('failed');
    expect(killed.signal).toBe('SIGKILL');
  });

  test('the time limit kills the whole tree, a grandchild ignoring SIGTERM included', async () => {
    const m = marker();
    const started = Date.now();
    const { result, output } = await build(
      runner,
      `sh -c 'trap "" TERM; sh -c "trap \\"\\" TERM; sleep ${m}"; :' & trap "" TERM; echo started; sleep ${m}`,
      { timeoutMs: 1500 },
    );
    expect(output).toBe('started\n');
    expect(result).toEqual({ outcome: 'timed-out', signal: 'SIGKILL' });
    expect(Date.now() - started).toBeLessThan(1500 + 10_000);
    expect(await processesWith(m)).toEqual([]);
  });

  test('cancelling kills the tree at once', async () => {
    const m = marker();
    const abort = new AbortController();
    const { result } = await build(runner, `(sleep ${m}) & echo started; sleep ${m}`, {
      signal: abort.signal,
      timeoutMs: 60_000,
      onOutput: (_t, sofar) => {
        if (sofar.includes('started')) abort.abort();
      },
    });
    expect(result).toEqual({ outcome: 'cancelled', signal: 'SIGKILL' });
    expect(await processesWith(m)).toEqual([]);
  });

  test('a build cancelled before it starts does not run', async () => {
    const abort = new AbortController();
    abort.abort();
    const { result, output, checkout } = await build(runner, 'touch ran', { signal: abort.signal });
    expect(result.outcome).toBe('cancelled');
    expect(output).toBe('');
    expect(existsSync(join(checkout, 'ran'))).toBe(false);
  });

  test("the command's exit ends the build: a child left in the background is killed", async () => {
    const m = marker();
    const { result, output, checkout } = await build(runner, `(sleep ${m}; touch late) & echo forked`);
    expect(result).toEqual({ outcome: 'succeeded', exitCode: 0 });
    expect(output).toBe('forked\n');
    // Gone now, so the file it would write can never appear.
    expect(await processesWith(m)).toEqual([]);
    expect(existsSync(join(checkout, 'late'))).toBe(false);
  });
});

describe('the bubblewrap sandbox', () => {
  test('writes outside the checkout fail', async () => {
    const name = `cairn-escape-${randomBytes(4).toString('hex')}`;
    const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [] });
    const { result, output } = await build(
      runner,
      `touch /usr/${name} 2>/dev/null; echo usr=$?; touch "$HOME/../../${name}" 2>/dev/null; echo root=$?; ` +
        `touch /etc/${name} 2>/dev/null; echo etc=$?; touch inside && echo inside=0`,
    );
    expect(result.outcome).toBe('succeeded');
    expect(output).toMatch(/^usr=[1-9]\d*\nroot=[1-9]\d*\netc=[1-9]\d*\ninside=0\n$/);
    for (const p of [`/usr/${name}`, `/${name}`, `/etc/${name}`]) expect(existsSync(p)).toBe(false);
  });

  test('/tmp is private to the build', async () => {
    const name = `cairn-private-${randomBytes(4).toString('hex')}`;
    const hostFile = join(tmpdir(), `cairn-host-${randomBytes(4).toString('hex')}`);
    await writeFile(hostFile, 'host');
    made.push(hostFile);
    const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [] });
    const { result, output } = await build(runner, `echo hi > /tmp/${name} && cat /tmp/${name}; ls /tmp`);
    expect(result.outcome).toBe('succeeded');
    expect(output).toContain('hi\n');
    expect(output).not.toContain(hostFile.slice(tmpdir().length + 1));
    expect(existsSync(`/tmp/${name}`)).toBe(false);
    expect(existsSync(join(tmpdir(), name))).toBe(false);
  });

  test('the data directory can be neither read nor listed', async () => {
    const dataDir = await tempDir('cairn-data-', dataParent);
    await writeFile(join(dataDir, 'secret.key'), 'the sealed secrets');
    await mkdir(join(dataDir, 'db'));
    const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [dataDir] });
    const { result, output } = await build(runner, `ls -A "${dataDir}"; cat "${dataDir}/secret.key"; echo cat=$?`);
    expect(result.outcome).toBe('succeeded');
    expect(output).not.toContain('the sealed secrets');
    expect(output).not.toMatch(/secret\.key\n|db\n/);
    expect(output).toMatch(/cat=[1-9]\d*\n$/);
    expect(output.split('\n')[0]).toMatch(/No such file/); // ls -A printed nothing; the first line is cat's complaint
  });

  test('a checkout inside the data directory works, the rest of it stays hidden', async () => {
    const dataDir = await tempDir('cairn-data-', dataParent);
    await writeFile(join(dataDir, 'secret.key'), 'the sealed secrets');
    const checkout = join(dataDir, 'builds', 'd-1');
    await mkdir(join(checkout, 'www'), { recursive: true });
    await writeFile(join(dataDir, 'builds', 'other-site.txt'), 'another site');
    const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [dataDir] });
    const { result, output } = await build(
      runner,
      `pwd; echo ok > out; ls -A "${dataDir}" "${dataDir}/builds"; cat "${dataDir}/secret.key" 2>&1; cat ../../other-site.txt 2>&1; :`,
      { checkout, directory: 'www' },
    );
    expect(result.outcome).toBe('succeeded');
    expect(output.split('\n')[0]).toBe(join(checkout, 'www'));
    expect(await readFile(join(checkout, 'www', 'out'), 'utf8')).toBe('ok\n');
    expect(output).not.toContain('the sealed secrets');
    expect(output).not.toContain('another site');
    expect(output).not.toContain('secret.key\n');
    expect(output).not.toContain('other-site.txt\n');
  });

  test("the service user's home is hidden", async () => {
    expect((await readdir(homedir())).length).toBeGreaterThan(0);
    const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [] });
    const { result, output } = await build(runner, `ls -A "${homedir()}" 2>/dev/null | wc -l`);
    expect(result.outcome).toBe('succeeded');
    expect(output.trim()).toBe('0');
  });

  test('the build sees only its own processes', async () => {
    const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [] });
    const { output } = await build(runner, `ls /proc | grep -c '^[0-9]'`);
    // bwrap's init, sh, ls and grep, give or take the shell's forks.
    expect(Number(output.trim())).toBeLessThan(8);
  });
});

describe('without bubblewrap', () => {
  const missing: Partial<BwrapRunnerOptions> = { bwrapPath: '/nonexistent/bin/bwrap' };

  test('builds are refused, saying what to do', async () => {
    const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [], ...missing });
    const checkout = await tempDir('cairn-checkout-');
    const attempt = build(runner, 'touch ran', { checkout });
    await expect(attempt).rejects.toBeInstanceOf(BuildRefused);
    await expect(attempt).rejects.toThrow(/install bubblewrap.*CAIRN_BUILD_SANDBOX=none/);
    expect(existsSync(join(checkout, 'ran'))).toBe(false);
  });

  test('told ahead that a build is coming (as a deploy does), it refuses the build with the same words, and rejects nothing unheard', async () => {
    const workspace = join(await tempDir('cairn-workspace-'), 'builds');
    const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [], workspace, ...missing });
    runner.prepare();
    await runner.settled();
    expect(await runner.overlayUnavailable()).toBeUndefined(); // never got as far as the overlay
    expect(existsSync(workspace)).toBe(false);
    const checkout = await tempDir('cairn-checkout-');
    const attempt = build(runner, 'touch ran', { checkout });
    await expect(attempt).rejects.toBeInstanceOf(BuildRefused);
    await expect(attempt).rejects.toThrow(
      /bubblewrap \(\/nonexistent\/bin\/bwrap\) was not found: install bubblewrap.*CAIRN_BUILD_SANDBOX=none/,
    );
    expect(existsSync(join(checkout, 'ran'))).toBe(false);
  });

  test('sandbox=none builds all the same', async () => {
    const runner = new BwrapRunner({ sandbox: 'none', hide: [], ...missing });
    expect(runner.name).toMatch(/no sandbox/);
    const { result, checkout } = await build(runner, 'touch ran');
    expect(result.outcome).toBe('succeeded');
    expect(existsSync(join(checkout, 'ran'))).toBe(true);
  });
});

/** A TCP server on this machine that greets whoever connects, and counts them. */
async function greeter(host: string): Promise<{ server: Server; port: number; accepted: () => number }> {
  let count = 0;
  const server = createServer((socket) => {
    count++;
    socket.end(`hello from ${host}\n`);
  });
  await new Promise<void>((ready, fail) => server.once('error', fail).listen(0, host, ready));
  return { server, port: (server.address() as { port: number }).port, accepted: () => count };
}

/** This machine's first non-loopback IPv4 address: to the build, an address out there. */
function machineAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
}

/** A script the build runs: for each `host:port` argument, what connecting gave (the greeting, or the error code), one line each. */
const CONNECT = `
const net = require('node:net');
const tries = process.argv.slice(2).map((target) => new Promise((done) => {
  const [host, port] = target.split(':');
  let said = '';
  const socket = net.connect(Number(port), host);
  socket.setTimeout(5000, () => socket.destroy(Object.assign(new Error('timed out'), { code: 'TIMEOUT' })));
  socket.on('data', (d) => (said += d));
  socket.on('end', () => done(target + ' ' + said.trim()));
  socket.on('error', (err) => done(target + ' ' + (err.code || err.message)));
}));
Promise.all(tries).then((lines) => console.log(lines.join('\\n')));
`;

/** slirp4netns processes running now, by pid. */
async function slirps(): Promise<number[]> {
  return (await processesWith('slirp4netns'))
    .filter((line) => /^\d+: \S*slirp4netns --configure /.test(line))
    .map((line) => Number(line.split(':')[0]));
}

describe('the network a build has', () => {
  const servers: Server[] = [];
  afterAll(() => servers.forEach((s) => s.close()));
  const listen = async (host: string) => {
    const g = await greeter(host);
    servers.push(g.server);
    return g;
  };

  /** Runs CONNECT in a build against a server on 127.0.0.1 and one on this machine's other address (if any), plus `extra` targets. */
  async function connections(runner: BwrapRunner, extra: (loopbackPort: number) => string[] = () => []) {
    const loopback = await listen('127.0.0.1');
    const address = machineAddress();
    const outside = address ? await listen(address) : undefined;
    const checkout = await tempDir('cairn-checkout-');
    await writeFile(join(checkout, 'connect.cjs'), CONNECT);
    const targets = [`127.0.0.1:${loopback.port}`, ...(outside ? [`${address}:${outside.port}`] : []), ...extra(loopback.port)];
    const { result, output } = await build(runner, `node connect.cjs ${targets.join(' ')}`, { checkout });
    expect(result).toEqual({ outcome: 'succeeded', exitCode: 0 });
    const said = Object.fromEntries(
      output
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf(' ')), l.slice(l.indexOf(' ') + 1)]),
    );
    return { said, loopback, address, outside };
  }

  test('none: nothing but its own loopback', async () => {
    const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [] });
    const { said, loopback, address, outside } = await connections(runner);
    expect(said[`127.0.0.1:${loopback.port}`]).toBe('ECONNREFUSED');
    expect(loopback.accepted()).toBe(0);
    if (outside) {
      expect(said[`${address}:${outside.port}`]).toBe('ENETUNREACH');
      expect(outside.accepted()).toBe(0);
    }
    const { output } = await build(runner, `node -e 'console.log(Object.keys(require("node:os").networkInterfaces()).join(","))'`);
    expect(output).toBe('lo\n');
  });

  test("host: this machine's network, its loopback included (the documented gap)", async () => {
    const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [], network: 'host' });
    const { said, loopback, address, outside } = await connections(runner);
    expect(said[`127.0.0.1:${loopback.port}`]).toBe('hello from 127.0.0.1');
    if (outside) expect(said[`${address}:${outside.port}`]).toBe(`hello from ${address}`);
  });

  describe.each([
    ['through an overlay', {}],
    ['without an overlay', { overlay: false }],
  ] as Array<[string, Partial<BwrapRunnerOptions>]>)('outside (%s)', (how, extra) => {
    const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [], network: 'outside', ...extra });

    test("reaches this machine's other address, not its loopback, directly or through the gateway", async () => {
      expect(runner.name).toMatch(/slirp4netns/);
      const { said, loopback, address, outside } = await connections(runner, (port) => [`10.0.2.2:${port}`]);
      // Its own loopback, where nothing listens.
      expect(said[`127.0.0.1:${loopback.port}`]).toBe('ECONNREFUSED');
      // slirp4netns's way to the host's loopback, closed by --disable-host-loopback: refused at once (an ICMP unreachable), no hang.
      expect(said[`10.0.2.2:${loopback.port}`]).toBe('ENETUNREACH');
      expect(loopback.accepted()).toBe(0);
      if (outside) {
        expect(said[`${address}:${outside.port}`]).toBe(`hello from ${address}`);
        expect(outside.accepted()).toBe(1);
      } else {
        console.warn(
          'This machine has no non-loopback IPv4 address: a connection out of the sandbox was not tried (tap0 and its route are checked below).',
        );
      }
      expect(await runner.overlayUnavailable()).toBe(how === 'through an overlay' ? undefined : 'turned off');
    });

    test('its interface is tap0, 10.0.2.100/24, with the default route through 10.0.2.2', async () => {
      const script = `const os = require('node:os'); const a = os.networkInterfaces().tap0?.find((i) => i.family === 'IPv4'); console.log(a && a.address + '/' + a.netmask)`;
      const { result, output } = await build(runner, `node -e "${script}" && awk '$2 == "00000000" { print $1, $3 }' /proc/net/route`);
      expect(result.outcome).toBe('succeeded');
      // The default route's interface and gateway, as the kernel writes it (little-endian hex: 10.0.2.2).
      expect(output).toBe('10.0.2.100/255.255.255.0\ntap0 0202000A\n');
    });

    test('link-local addresses, the metadata service among them, are refused at once; the build cannot reopen them', async () => {
      const checkout = await tempDir('cairn-checkout-');
      await writeFile(join(checkout, 'connect.cjs'), CONNECT);
      const { result, output } = await build(
        runner,
        'node connect.cjs 169.254.169.254:80 169.254.0.1:443 && ip route && ip -6 route && ' +
          'ip route del prohibit 169.254.0.0/16; echo del=$?; ip route add 169.254.169.254 dev tap0; echo add=$?; ip route get 169.254.169.254; echo get=$?',
        { checkout },
      );
      expect(result).toEqual({ outcome: 'succeeded', exitCode: 0 });
      const lines = output.split('\n');
      // EACCES is what a prohibit route answers here, at once: a metadata service, slirp4netns or a time-out would say something else.
      expect(lines.slice(0, 2)).toEqual(['169.254.169.254:80 EACCES', '169.254.0.1:443 EACCES']);
      expect(lines).toContain('prohibit 169.254.0.0/16 ');
      expect(output).toMatch(/^prohibit fd00:ec2::254 /m);
      expect(output).toMatch(/^prohibit fe80::\/10 /m);
      // Without CAP_NET_ADMIN over the namespace's owner, neither removing the route nor going round it works.
      expect(output).toMatch(/Operation not permitted\ndel=2\n/);
      expect(output).toMatch(/Operation not permitted\nadd=2\n/);
      expect(output).toMatch(/RTNETLINK answers: Permission denied\nget=2\n$/);
    });

    test('slirp4netns is gone once the build has ended, timed out or been cancelled', async () => {
      const before = new Set(await slirps());
      const during: number[] = [];
      // Each build prints "started" once its network is up, then waits: the test notes the build's slirp4netns, then lets it end, lets it time out, or cancels it.
      const seen = async () => during.push(...(await slirps()).filter((p) => !before.has(p)));
      const waits = `${WAIT_FOR_GO}; echo started; ${UNTIL_GO}`;
      const ended = await build(runner, waits, {
        onOutput: (_t, sofar) => {
          if (sofar === 'started\n') void seen().then(() => letGo(waits));
        },
      });
      expect(ended.result.outcome).toBe('succeeded');
      expect(during).toHaveLength(1);
      expect(await slirps()).not.toContain(during[0]);

      const m = marker();
      let noted: Promise<unknown> = Promise.resolve();
      const timedOut = await build(runner, `echo started; sleep ${m}`, {
        timeoutMs: 3000,
        onOutput: (_t, sofar) => {
          if (sofar === 'started\n') noted = seen();
        },
      });
      await noted;
      expect(timedOut.result).toEqual({ outcome: 'timed-out', signal: 'SIGKILL' });
      expect(during).toHaveLength(2);

      const abort = new AbortController();
      const cancelled = await build(runner, `echo started; sleep ${m}`, {
        signal: abort.signal,
        timeoutMs: 60_000,
        onOutput: (_t, sofar) => {
          if (sofar === 'started\n') noted = seen().then(() => abort.abort());
        },
      });
      await noted;
      expect(cancelled.result).toEqual({ outcome: 'cancelled', signal: 'SIGKILL' });
      expect(during).toHaveLength(3);

      const left = await slirps();
      expect(during.filter((p) => left.includes(p))).toEqual([]);
      expect(await processesWith(m)).toEqual([]);
    });
  });

  test('outside without slirp4netns: builds are refused, naming the package', async () => {
    const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [], network: 'outside', slirp4netnsPath: '/nonexistent/bin/slirp4netns' });
    const checkout = await tempDir('cairn-checkout-');
    for (let i = 0; i < 2; i++) {
      const attempt = build(runner, 'touch ran', { checkout });
      await expect(attempt).rejects.toBeInstanceOf(BuildRefused);
      await expect(attempt).rejects.toThrow(/slirp4netns.*not found.*apt-get install slirp4netns.*CAIRN_BUILD_NETWORK/);
    }
    expect(existsSync(join(checkout, 'ran'))).toBe(false);
  });

  test('outside with a slirp4netns that fails: builds are refused with what it said, the command never run', async () => {
    const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [], network: 'outside', slirp4netnsPath: '/bin/false' });
    const checkout = await tempDir('cairn-checkout-');
    const attempt = build(runner, 'touch ran', { checkout });
    await expect(attempt).rejects.toBeInstanceOf(BuildRefused);
    await expect(attempt).rejects.toThrow(
      /slirp4netns \(\/bin\/false\) does not work here \(slirp4netns could not connect the build to the network \(exit 1\)\): slirp4netns needs \/dev\/net\/tun.*CAIRN_BUILD_NETWORK/,
    );
    expect(existsSync(join(checkout, 'ran'))).toBe(false);
  });

  test.each([
    [
      "without iproute2's ip: builds are refused, naming the package",
      '/nonexistent/bin/ip',
      /ip \(\/nonexistent\/bin\/ip\) was not found.*link-local.*apt-get install iproute2.*CAIRN_BUILD_NETWORK/,
    ],
    [
      'where the routes cannot be made: builds are refused, the command never run',
      '/bin/false',
      /routes could not be made \(cairn: link-local addresses could not be closed to the build\): install iproute2/,
    ],
  ])('outside %s', async (_what, ipPath, refusal) => {
    const runner = new BwrapRunner({ sandbox: 'bwrap', hide: [], network: 'outside', ipPath });
    const checkout = await tempDir('cairn-checkout-');
    const attempt = build(runner, 'touch ran', { checkout });
    await expect(attempt).rejects.toBeInstanceOf(BuildRefused);
    await expect(attempt).rejects.toThrow(refusal);
    expect(existsSync(join(checkout, 'ran'))).toBe(false);
  });

  test('outside without the sandbox is refused rather than pretended', async () => {
    const runner = new BwrapRunner({ sandbox: 'none', hide: [], network: 'outside' });
    const checkout = await tempDir('cairn-checkout-');
    await expect(build(runner, 'touch ran', { checkout })).rejects.toThrow(/outside needs the bubblewrap sandbox/);
    expect(existsSync(join(checkout, 'ran'))).toBe(false);
  });
});
