/** S3's naming rules for buckets and keys. */
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export function isValidBucketName(name: string): boolean {
  return BUCKET_NAME.test(name) && !name.includes('..') && !/^\d+\.\d+\.\d+\.\d+$/.test(name) && !name.startsWith('xn--');
}
