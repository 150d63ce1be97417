/**
 * Deploy logs as files under the data directory (`deploy-logs/<site>/<deploy>.log`),
 * each rewritten through a temporary file and a rename, so a reader never
 * sees half a log.
 */
import { mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { LogStore } from '../core/ports/log-store.js';

let temporaries = 0;

export class FileLogStore implements LogStore {
  constructor(private readonly dir: string) {}

  private path(key: string): string {
    if (!/^[A-Za-z0-9_-]+\/[A-Za-z0-9_-]+$/.test(key)) throw new Error(`not a deploy log key: ${key}`);
    return join(this.dir, `${key}.log`);
  }

  async write(key: string, text: string): Promise<void> {
    const file = this.path(key);
    await mkdir(dirname(file), { recursive: true });
    const temporary = `${file}.${process.pid}.${++temporaries}.tmp`;
    await writeFile(temporary, text);
    await rename(temporary, file);
  }

  async read(key: string): Promise<string | undefined> {
    try {
      return await readFile(this.path(key), 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  /**
   * Size and text from one open file: a writer replaces the log by renaming
   * a new file over it, never writing into this one, so the text read is
   * exactly the size admitted.
   */
  async readAdmitted(key: string, admit: (bytes: number) => void): Promise<Buffer | undefined> {
    let file;
    try {
      file = await open(this.path(key), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    try {
      admit((await file.stat()).size);
      return await file.readFile();
    } finally {
      await file.close();
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }
}
