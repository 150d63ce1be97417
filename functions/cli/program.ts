/**
 * The `cairn` command line (bin/cairn.ts runs it): commander's program with
 * every command family, and the one place failures become one line on
 * stderr and an exit status.
 */
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { contextFor } from './context.js';
import { registerDeploys } from './deploys.js';
import { registerDomains } from './domains.js';
import { registerLogin } from './login.js';
import { CliError, EXIT, oneLine, type Streams } from './output.js';
import { registerSites } from './sites.js';
import { registerStorage } from './storage/index.js';

function version(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/**
 * Where a run of the command line reads and writes: its output streams (and
 * stdin), its environment (settings, the config directory from HOME or
 * XDG_CONFIG_HOME) and the directory relative paths start from. The
 * process's own unless given: bin/cairn.ts gives nothing; a caller running
 * the command line in its own process gives all of them.
 */
export interface CliIo {
  streams?: Streams;
  env?: Record<string, string | undefined>;
  cwd?: string;
}

const processStreams = (): Streams => ({ stdout: process.stdout, stderr: process.stderr });

export function buildProgram(streams: Streams = processStreams(), io: Omit<CliIo, 'streams'> = {}): Command {
  const program = new Command('cairn')
    .description("Cairn from the command line: your team's sites, deploys and files on IPFS")
    .version(version(), '-V, --version', "print cairn's version")
    .option('--json', 'print one JSON value on stdout, for scripts')
    .option('--no-progress', 'no progress bars (they are drawn only on a terminal anyway)')
    .showSuggestionAfterError()
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .exitOverride()
    .configureOutput({
      writeOut: (text) => streams.stdout.write(text),
      writeErr: (text) => streams.stderr.write(text),
      outputError: (text, write) => write(`cairn: ${oneLine(text.replace(/^error: /, ''))}\n`),
    })
    .addHelpText(
      'after',
      `
Settings come from cairn login (kept in ~/.config/cairn/config.json), which
the environment overrides: CAIRN_API_URL, CAIRN_API_KEY, CAIRN_STORAGE_ENDPOINT,
CAIRN_GATEWAY_URL, CAIRN_ACCESS_KEY_ID, CAIRN_SECRET_ACCESS_KEY, ...
Exit status: 0 done, 1 failed, 2 bad usage, 3 deploy FAILED, 4 deploy CANCELLED.`,
    );
  const context = (command: Command) => contextFor(command, streams, io.env, io.cwd);
  registerLogin(program, context);
  registerSites(program, context);
  registerDeploys(program, context);
  registerDomains(program, context);
  registerStorage(program, context);
  return program;
}

/** Runs the command line on `argv` (without node and the script); resolves to the exit status. */
export async function runCli(argv: string[], io: CliIo = {}): Promise<number> {
  const streams = io.streams ?? processStreams();
  const env = io.env ?? process.env;
  const program = buildProgram(streams, { env, cwd: io.cwd });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here too, with exit code 0; commander has printed what it had to say
      // (a family without its subcommand prints its help as an error).
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (err instanceof CliError) {
      streams.stderr.write(`cairn: ${oneLine(err.message)}\n`);
      return err.exitCode;
    }
    // A fault of cairn's own: still one line, the stack only when asked for.
    const e = err as Error;
    streams.stderr.write(`cairn: ${oneLine(e?.message ?? String(err))}${env.CAIRN_DEBUG ? `\n${e?.stack}` : ''}\n`);
    return EXIT.error;
  }
}
