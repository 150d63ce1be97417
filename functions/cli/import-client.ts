/**
 * The client half of the import contract (`/imports/` on the API port,
 * with the hosting API key): which blocks the service lacks, and CARs of
 * blocks under one root. The server half is functions/core/hosting/imports.ts.
 */
import { CarWriter } from '@ipld/car/writer';
import type { CID } from 'multiformats/cid';
import { CliError, reasonOf } from './output.js';

/** The most CIDs one `POST /imports/have` may ask about. */
export const HAVE_BATCH = 10_000;
const TIMEOUT_MS = 10 * 60_000;

export interface CarAnswer {
  ok: true;
  root: string;
  /** Blocks of this CAR the service stored. */
  blocks: number;
  bytes: number;
  complete: boolean;
  /** With complete false: how many blocks under the root it still lacks. */
  missing?: number;
}

export interface Block {
  cid: CID;
  bytes: Uint8Array;
}

export class ImportClient {
  constructor(
    readonly apiUrl: string,
    private readonly apiKey: string,
  ) {}

  private async post(path: string, body: Uint8Array | string, contentType: string): Promise<unknown> {
    const url = `${this.apiUrl}/imports/${path}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': contentType, accept: 'application/json', authorization: this.apiKey },
        body: body as BodyInit,
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (err) {
      throw new CliError(`cannot reach ${url}: ${reasonOf(err)}`);
    }
    const text = await response.text().catch(() => '');
    let parsed: { ok?: boolean; error?: string } | undefined;
    try {
      parsed = JSON.parse(text) as { ok?: boolean; error?: string };
    } catch {
      parsed = undefined;
    }
    if (!response.ok) {
      const said = parsed?.error ?? (text.trim().slice(0, 200) || `status ${response.status}`);
      // A service from before the import endpoint answers its routes' 404.
      if (response.status === 404) throw new CliError(`${url} answered 404: this service has no import endpoint (${said})`);
      throw new CliError(`the service refused the upload (${response.status}): ${said}`);
    }
    if (!parsed) throw new CliError(`${url} answered ${response.status} without JSON`);
    return parsed;
  }

  /** The CIDs among `cids` whose blocks the service does not hold, asked in batches. */
  async missing(cids: string[], onBatch?: (asked: number) => void): Promise<Set<string>> {
    const missing = new Set<string>();
    for (let i = 0; i < cids.length; i += HAVE_BATCH) {
      const batch = cids.slice(i, i + HAVE_BATCH);
      const answer = (await this.post('have', JSON.stringify({ cids: batch }), 'application/json')) as { missing?: unknown };
      if (!Array.isArray(answer.missing)) throw new CliError('POST /imports/have answered without a "missing" list');
      for (const cid of answer.missing) missing.add(String(cid));
      onBatch?.(Math.min(cids.length, i + HAVE_BATCH));
    }
    return missing;
  }

  /** One CARv1 with `root` in its header and these blocks (none: asks only whether the DAG is complete). */
  async sendCar(root: CID, blocks: Block[]): Promise<CarAnswer> {
    const body = await carBytes(root, blocks);
    const answer = (await this.post('car', body, 'application/vnd.ipld.car')) as Partial<CarAnswer>;
    if (answer.ok !== true || typeof answer.complete !== 'boolean')
      throw new CliError(`POST /imports/car answered an unexpected body: ${JSON.stringify(answer).slice(0, 200)}`);
    return answer as CarAnswer;
  }
}

export async function carBytes(root: CID, blocks: Block[]): Promise<Uint8Array> {
  const { writer, out } = CarWriter.create([root]);
  const chunks: Uint8Array[] = [];
  const reading = (async () => {
    for await (const chunk of out) chunks.push(chunk);
  })();
  for (const block of blocks) await writer.put(block);
  await writer.close();
  await reading;
  return Buffer.concat(chunks);
}
