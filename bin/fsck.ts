/**
 * `npm run fsck`: the integrity check of a data directory (see
 * functions/core/storage/fsck.ts). Stop the service first: it opens the
 * data directory itself. `--dry-run` reports without changing anything.
 *
 * Exit status: 0 when every object is whole, 2 when damage was found (and,
 * unless --dry-run, marked), 1 when the check itself could not run.
 */
import { ConfigError, loadConfig } from '../functions/core/config.js';
import { createLogger } from '../functions/core/logger.js';
import { openLocalStorage } from '../functions/local/service.js';
import { checkIntegrity } from '../functions/core/storage/fsck.js';

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => a !== '--dry-run');
  if (unknown.length) {
    process.stderr.write(`cairn fsck: unknown argument ${unknown[0]} (usage: npm run fsck [-- --dry-run])\n`);
    return 1;
  }
  const repair = !args.includes('--dry-run');
  const config = loadConfig();
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
  const storage = await openLocalStorage(config, logger);
  try {
    const report = await checkIntegrity(storage.services, { repair });
    const out = process.stdout;
    out.write(`Checked ${report.objects} objects: ${report.cids} CIDs, ${report.blocks} blocks read and hashed.\n`);
    for (const d of report.damaged) out.write(`DAMAGED ${d.bucket}/${d.key} (${d.cid}): ${d.problem}\n`);
    for (const b of report.missingBlocks) out.write(`missing block ${b}\n`);
    for (const b of report.corruptBlocks)
      out.write(`corrupt block ${b}${repair ? ' (deleted: upload the object again to restore it)' : ''}\n`);
    const verb = repair ? '' : 'would be ';
    out.write(
      [
        `pin records ${verb}rebuilt for ${report.rebuiltPins} CIDs`,
        `${report.staleRefs} stale block references ${verb}dropped`,
        `${report.staleRoots} unreferenced roots ${verb}given to collection`,
        `${report.requeued} set-aside candidates ${verb}given back to collection`,
        `${report.heliaRecords} old Helia pin records ${verb}removed`,
      ].join('; ') + '.\n',
    );
    out.write(
      report.damaged.length
        ? `${report.damaged.length} damaged objects${repair ? ', marked: GET answers InvalidObjectState until they are uploaded again' : ''}.\n`
        : 'Every object is whole.\n',
    );
    return report.damaged.length ? 2 : 0;
  } finally {
    await storage.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`cairn fsck: ${err instanceof ConfigError ? err.message : ((err as Error)?.stack ?? err)}\n`);
    process.exit(1);
  },
);
