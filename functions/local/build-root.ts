/**
 * The file system a build sees (bwrap-runner.ts): a minimal read-only root
 * made for it, not this machine's with holes cut in it.
 *
 * Hiding chosen paths (the data directory, the service user's home) left
 * everything else the service's user can read readable and publishable:
 * /etc/shadow when the service runs as root, the bootstrap file with every
 * bootstrap account's secret key, the service's own checkout. So the
 * sandbox's root is an empty tmpfs that gets only:
 *
 * - the system's programs and libraries, read-only: /usr, and /bin, /sbin,
 *   /lib* as this machine has them (symlinks into /usr on a merged-/usr
 *   system such as Debian 12, directories elsewhere);
 * - a synthetic /etc: passwd and group naming the build's unprivileged user
 *   (BUILD_UID) and nobody else, hosts, resolv.conf for the build's network,
 *   nsswitch.conf reading files only; and from this machine's /etc, read-only,
 *   only what tools need and no secret is kept in: /etc/alternatives (which
 *   Debian's /usr/bin symlinks point into), the CA certificates
 *   (/etc/ssl/certs, whose links point into /usr/share/ca-certificates, and
 *   /etc/pki on Red Hat's systems; never /etc/ssl/private), the dynamic
 *   linker's cache, time zone, os-release and the like;
 * - its checkout, its /tmp (a tmpfs of CAIRN_BUILD_TMP bytes), /dev and /proc
 *   of its own; and Node's install prefix where that is not under /usr.
 *
 * Nothing else exists there: not /root, /home, /var, /opt, /srv, /run, the
 * data directory, nor the service's checkout.
 */
import { lstat, mkdtemp, readFile, readlink, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';

/** The build's user and group inside its namespace: not 0, so a build has no root of its own to lean on (`id -u` says 1000). */
export const BUILD_UID = 1000;
export const BUILD_GID = 1000;
/** Its name in the synthetic /etc/passwd, and the sandbox's host name. */
const BUILD_USER = 'build';
export const BUILD_HOST = 'cairn-build';

/** The top-level system paths a build runs on: bound read-only, or made the same symlinks as here. */
const SYSTEM_PATHS = ['/usr', '/bin', '/sbin', '/lib', '/lib64', '/lib32', '/libx32'];

/**
 * What of this machine's /etc a build sees, read-only, where it exists:
 * what programs read to start (the linker's cache, alternatives), to trust
 * TLS servers (CA certificates) and to tell the time. Nothing here holds a
 * secret on a stock system; /etc/ssl/private, shadow and the like are not
 * among them.
 */
const ETC_SHARED = [
  'alternatives',
  'ssl/certs',
  'ssl/openssl.cnf',
  'ca-certificates.conf',
  'pki/tls/certs',
  'pki/ca-trust/extracted',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'timezone',
  'os-release',
  'debian_version',
  'mime.types',
  'protocols',
  'services',
  'gai.conf',
  'host.conf',
  'fonts',
];

/**
 * What resolv.conf says for each network: slirp4netns's DNS forwarder for
 * `outside` (outside-network.ts: 10.0.2.3), this machine's resolver for
 * `host`, and for `none`, where nothing can be resolved, only loopback.
 */
const SLIRP_DNS = '10.0.2.3';

/** The synthetic /etc files of one build, written to a directory of their own (removed with `remove`). */
export interface BuildEtc {
  dir: string;
  remove(): Promise<void>;
}

export async function writeBuildEtc(network: 'none' | 'host' | 'outside'): Promise<BuildEtc> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-build-etc-'));
  const resolv =
    network === 'outside'
      ? `nameserver ${SLIRP_DNS}\n`
      : network === 'host'
        ? await readFile('/etc/resolv.conf', 'utf8').catch(() => 'nameserver 127.0.0.53\n')
        : 'nameserver 127.0.0.1\n';
  const files: Record<string, string> = {
    passwd: `root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n${BUILD_USER}:x:${BUILD_UID}:${BUILD_GID}:Cairn build:/tmp/home:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\n${BUILD_USER}:x:${BUILD_GID}:\nnogroup:x:65534:\n`,
    hosts: `127.0.0.1\tlocalhost ${BUILD_HOST}\n::1\tlocalhost ip6-localhost ip6-loopback\n`,
    hostname: `${BUILD_HOST}\n`,
    'resolv.conf': resolv,
    'nsswitch.conf': 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n',
  };
  await Promise.all(Object.entries(files).map(([name, text]) => writeFile(join(dir, name), text, { mode: 0o644 })));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * bubblewrap's options for the root described at the top: the system paths
 * and the synthetic and shared /etc; and Node's prefix where it is not
 * under them. The checkout, /tmp, /dev and /proc are the runner's.
 */
export async function rootArgs(etc: BuildEtc, nodeBin: string): Promise<{ args: string[]; nodePrefix?: string }> {
  const args: string[] = [];
  const bound: string[] = [];
  for (const path of SYSTEM_PATHS) {
    const st = await lstat(path).catch(() => undefined);
    if (!st) continue;
    if (st.isSymbolicLink()) {
      args.push('--symlink', await readlink(path), path);
    } else if (st.isDirectory()) {
      args.push('--ro-bind', path, path);
      bound.push(path);
    }
  }
  args.push('--dir', '/etc');
  for (const name of ['passwd', 'group', 'hosts', 'hostname', 'resolv.conf', 'nsswitch.conf'])
    args.push('--ro-bind', join(etc.dir, name), `/etc/${name}`);
  for (const name of ETC_SHARED) {
    const path = `/etc/${name}`;
    // A symlink (os-release -> ../usr/lib/os-release) is bound as what it points to, which must exist.
    if (
      await realpath(path).then(
        () => true,
        () => false,
      )
    )
      args.push('--ro-bind', path, path);
  }
  // Node may live outside /usr (a user's ~/.nvm, /opt/node, the service's own node_modules): its install prefix, to be bound
  // read-only by the runner, in order with the checkout and /tmp (it may be under either).
  const prefix = dirname(await realpath(nodeBin));
  const nodePrefix = prefix !== '/' && !bound.some((b) => within(b, prefix)) ? prefix : undefined;
  return { args, nodePrefix };
}

function within(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}
