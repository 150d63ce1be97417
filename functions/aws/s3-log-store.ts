/** Deploy logs in AWS: objects `deploy-logs/<site>/<deploy>.log` in the stack's block bucket. */
import type { S3Client } from '@aws-sdk/client-s3';
import type { LogStore } from '../core/ports/log-store.js';

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
    await this.s3.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: this.key(key), Body: text, ContentType: 'text/plain; charset=utf-8' }),
    );
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

  /**
   * GetObject's answer carries the size (Content-Length) before its body is
   * read; a refused log's body is destroyed unread, which ends the connection
   * instead of draining it. https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html
   */
  async readAdmitted(key: string, admit: (bytes: number) => void): Promise<Buffer | undefined> {
    const { GetObjectCommand } = await import('@aws-sdk/client-s3');
    let out;
    try {
      out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(key) }));
    } catch (err) {
      if ((err as Error).name === 'NoSuchKey') return undefined;
      throw err;
    }
    const bytes = async () => {
      const array = await out.Body!.transformToByteArray();
      return Buffer.from(array.buffer, array.byteOffset, array.byteLength);
    };
    if (out.ContentLength === undefined) {
      // No length said (S3 always says one): admitted as read.
      const read = await bytes();
      admit(read.byteLength);
      return read;
    }
    try {
      admit(out.ContentLength);
    } catch (err) {
      (out.Body as { destroy?: () => void } | undefined)?.destroy?.();
      throw err;
    }
    return await bytes();
  }

  async delete(key: string): Promise<void> {
    const { DeleteObjectCommand } = await import('@aws-sdk/client-s3');
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(key) }));
  }
}
