/** Deploy logs in AWS: objects `deploy-logs/<site>/<deploy>.log` in the stack's block bucket. */
import type { S3Client } from '@aws-sdk/client-s3';
import type { LogStore } from '../ports/log-store.js';

export class S3LogStore implements LogStore {
  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
  ) {}

  private key(key: string): string {
    return `deploy-logs/${key}.log`;
  }

  async write(key: string, text: string): Promise<void> {
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    await this.s3.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.key(key), Body: text, ContentType: 'text/plain; charset=utf-8' }));
  }

  async read(key: string): Promise<string | undefined> {
    const { GetObjectCommand } = await import('@aws-sdk/client-s3');
    try {
      const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(key) }));
      return await out.Body!.transformToString('utf8');
    } catch (err) {
      if ((err as Error).name === 'NoSuchKey') return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    const { DeleteObjectCommand } = await import('@aws-sdk/client-s3');
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(key) }));
  }
}
