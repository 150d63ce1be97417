/**
 * A build's way out to other machines but not into this one
 * (CAIRN_BUILD_NETWORK=outside): slirp4netns, a user-mode TCP/IP stack,
 * gives the build's own network namespace an interface (tap0, 10.0.2.100,
 * gateway 10.0.2.2, DNS 10.0.2.3) whose connections it makes again from
 * this machine's network. With `--disable-host-loopback` it refuses those
 * to 10.0.2.2, which would be this machine's loopback, where the service's
 * ports listen; the build's own 127.0.0.1 is its own. The build's synthetic
 * /etc/resolv.conf (build-root.ts) names 10.0.2.3, which slirp4netns
 * answers by asking this machine's resolver.
 *
 * The namespace is made by `unshare --user --map-root-user --net` around
 * bubblewrap, which keeps it (`--share-net`): a network namespace can be
 * entered only with CAP_SYS_ADMIN over the user namespace that owns it,
 * which a service that is not root has in a user namespace it made, and
 * slirp4netns enters unshare's (`--userns-path`). bubblewrap's own would not
 * do: as any user but root it moves the build into a second, nested user
 * namespace (to drop the root it needed for /dev/pts), from which the
 * first one's network cannot be entered.
 *
 * The order: bubblewrap writes its sandbox's pid on `--info-fd` once the
 * sandbox exists, and waits on `--block-fd` before running the command;
 * slirp4netns is started on that sandbox's network, writes `--ready-fd` once
 * tap0 is up, and only then is the byte bubblewrap waits for written. It
 * exits when its `--exit-fd` closes, which this process's death does too;
 * the runner kills it when the build ends.
 *
 * Link-local addresses are closed first (closeLinkLocal): slirp4netns makes
 * the build's connections again from this machine, which on a cloud VM
 * reaches the instance metadata service at 169.254.169.254 and the
 * credentials it hands out. Between unshare and bubblewrap the namespace's
 * root may still change its routes; the build, with no capabilities and
 * in a user namespace that does not own the network, cannot undo them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

/** The fds of the sandboxed process (bubblewrap) that carry its pid out and the go-ahead in. */
export const INFO_FD = 3;
export const BLOCK_FD = 4;

/** The namespaces, made by util-linux unshare, that bubblewrap runs in for a build with `outside` network. */
export const OUTSIDE_NAMESPACES = ['--user', '--map-root-user', '--net'];

/** What a build's log (or the start-up check) says when the routes below could not be made. */
export const ROUTES_FAILED = 'cairn: link-local addresses could not be closed to the build';

/**
 * `prohibit` routes (a connect fails at once with EACCES, which nothing out
 * there answers, so a build's log shows it was refused here) for IPv4's
 * link-local block, and where the kernel has IPv6 for AWS's IPv6 metadata
 * address and IPv6 link-local. slirp4netns (without --enable-ipv6) carries
 * no IPv6 at all; the kernel's own fe80::/64 on tap0, more specific, leads
 * only to it. Any failing fails the build before it runs, saying so.
 */
const CLOSE_LINK_LOCAL = `ip="$1"; shift
{ "$ip" -4 route add prohibit 169.254.0.0/16 &&
  if [ -e /proc/net/if_inet6 ]; then "$ip" -6 route add prohibit fd00:ec2::254/128 && "$ip" -6 route add prohibit fe80::/10; fi
} || { echo "${ROUTES_FAILED}" >&2; exit 1; }
exec "$@"`;

/**
 * argv run in unshare's namespaces (see above): the routes that close
 * link-local addresses are made, then bubblewrap's `sandboxed` command
 * runs in their place. `ip` is iproute2's, by absolute path.
 */
export function closeLinkLocal(ip: string, sandboxed: string[]): string[] {
  return ['/bin/sh', '-c', CLOSE_LINK_LOCAL, 'cairn-routes', ip, ...sandboxed];
}

export interface OutsideLink {
  /** Settles, with why, only if the network could not be set up; the build must then be ended. */
  failed: Promise<string>;
  /** Ends slirp4netns, if it was started; resolves once it has exited. */
  close(): Promise<void>;
}

/**
 * Connects the sandbox that the process `pid` (bubblewrap, inside unshare's
 * namespaces) makes, once it says so on `info`, and lets its command go on
 * through `block` once the network is up.
 */
export function connectOutside(slirp: string, pid: number, info: Readable, block: Writable): OutsideLink {
  let closed = false;
  let ready = false;
  let slirpProcess: ChildProcess | undefined;
  let exited = Promise.resolve();
  let fail: (why: string) => void = () => undefined;
  const failed = new Promise<string>((settle) => (fail = settle));
  // bubblewrap gone early (a time-out, a cancel) closes these under us: its own exit says what happened.
  block.on('error', () => undefined);
  info.on('error', () => undefined);

  let text = '';
  info.setEncoding('utf8');
  info.on('data', (d: string) => (text += d));
  info.on('end', () => {
    if (closed) return;
    // bubblewrap that failed before making its sandbox writes nothing; its exit and message end the build.
    const sandbox = childPid(text);
    if (sandbox === undefined) return;
    const args = [
      '--configure',
      '--mtu=65520',
      '--disable-host-loopback',
      `--ready-fd=${INFO_FD}`,
      `--exit-fd=${BLOCK_FD}`,
      `--userns-path=/proc/${pid}/ns/user`,
      '--netns-type=path',
      `/proc/${sandbox}/ns/net`,
      'tap0',
    ];
    const child = spawn(slirp, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], env: {} });
    slirpProcess = child;
    let said = '';
    child.stderr!.on('data', (d: Buffer) => (said = (said + d.toString()).slice(-2000)));
    exited = new Promise((settle) => {
      child.once('close', () => settle());
      child.once('error', (err) => {
        fail(`slirp4netns (${slirp}) could not be started: ${err.message}`);
        settle();
      });
    });
    for (const fd of [INFO_FD, BLOCK_FD]) (child.stdio[fd] as Readable).on('error', () => undefined);
    (child.stdio[INFO_FD] as Readable).once('data', () => {
      ready = true;
      block.end('1');
    });
    child.once('exit', (code, signal) => {
      if (ready || closed) return;
      // Without its lines of progress ("sent tapfd=..."): what went wrong, then "child failed(1)" and the like.
      const lines = said
        .trim()
        .split('\n')
        .filter((l) => l && !/tapfd/.test(l))
        .join('; ');
      fail(`slirp4netns could not connect the build to the network (${lines || signal || `exit ${code}`})`);
    });
  });

  return {
    failed,
    close() {
      closed = true;
      const child = slirpProcess;
      if (child && child.exitCode === null && child.signalCode === null) {
        // Closing its exit fd asks; the kill makes sure. Nothing of it is kept: tap0 goes with the sandbox's namespace.
        (child.stdio[BLOCK_FD] as Writable).end();
        child.kill('SIGKILL');
      }
      return exited;
    },
  };
}

/** The sandbox's pid in bubblewrap's --info-fd JSON (`{"child-pid": 1234, ...}`). */
function childPid(info: string): number | undefined {
  try {
    const pid = (JSON.parse(info) as { 'child-pid'?: unknown })['child-pid'];
    return typeof pid === 'number' && Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
