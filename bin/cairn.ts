/**
 * `cairn`, the command line (bin/cairn.mjs runs this through tsx; `npx
 * cairn` from the checkout). The commands are in functions/cli/.
 */
import { runCli } from '../functions/cli/program.js';
import { EXIT } from '../functions/cli/output.js';

process.once('SIGINT', () => {
  // A progress bar hides the cursor: give it back. Whatever the service was asked to do (a deploy) goes on.
  if (process.stderr.isTTY) process.stderr.write('\x1b[?25h\n');
  process.stderr.write('cairn: interrupted\n');
  process.exit(EXIT.interrupted);
});

const code = await runCli(process.argv.slice(2));
// Sockets kept alive by the HTTP clients must not hold the exit back; what
// was written to stdout and stderr goes out first.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
