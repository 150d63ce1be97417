/**
 * What every command's action gets: the output (people or --json), the
 * settings in force (read once, on first use), the GraphQL client, and a
 * progress display.
 */
import type { Command } from 'commander';
import { loadSettings, type Settings } from './config-store.js';
import { clientFor, type GraphqlClient } from './graphql-client.js';
import { Output, type Streams } from './output.js';
import { createProgress, type Progress } from './progress.js';

export interface Context {
  out: Output;
  env: Record<string, string | undefined>;
  /** The directory relative paths on the command line are read from. */
  cwd: string;
  stdin: NonNullable<Streams['stdin']>;
  settings(): Promise<Settings>;
  api(): Promise<GraphqlClient>;
  progress(): Progress;
}

export interface GlobalOptions {
  json?: boolean;
  progress?: boolean;
}

export function contextFor(
  command: Command,
  streams?: Streams,
  env: Record<string, string | undefined> = process.env,
  cwd: string = process.cwd(),
): Context {
  const globals = command.optsWithGlobals<GlobalOptions>();
  const out = new Output(globals.json === true, streams);
  let settings: Promise<Settings> | undefined;
  const ctx: Context = {
    out,
    env,
    cwd,
    stdin: streams?.stdin ?? process.stdin,
    settings: () => (settings ??= loadSettings(env, (text) => out.note(text))),
    api: async () => clientFor(await ctx.settings()),
    progress: () => createProgress(out, globals.progress !== false),
  };
  return ctx;
}
