/**
 * What `npm run smoke` runs against (bin/smoke.ts): the endpoints and the
 * credentials, given one by one (flags, or CAIRN_SMOKE_* variables, so it
 * runs against `npm start` too) or read from a deployed stack: its
 * CloudFormation outputs (lib/cairn-stack.ts and lib/first-account.ts name
 * them) and the first account's secret in Secrets Manager, which the first
 * deploy fills (functions/first-account/secret-value.ts). What is given
 * explicitly wins over what the stack says.
 *
 * The AWS clients are handed in, so a test reads a synthesized template's
 * outputs through stand-ins; bin/smoke.ts imports the SDK's clients only
 * for `--stack`.
 */
import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { readSecretContent } from '../functions/first-account/secret-value.js';

export interface SmokeTarget {
  graphqlUrl: string;
  /** The S3-compatible endpoint (path style; on AWS the stage is part of the path). */
  s3Endpoint: string;
  /** The IPFS gateway's origin (`/ipfs/<cid>`). */
  gatewayUrl: string;
  /** Sites answer at `<slug>.<sitesDomain>`; when unknown, read from a deploy's own address. */
  sitesDomain?: string;
  /** The region requests are signed for. */
  region: string;
  apiKey: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The bucket objects are written to; when unknown, the first the key pair lists. */
  bucket?: string;
  /** The public git repository a site is deployed from, and its branch. */
  repository: string;
  branch: string;
}

/**
 * The stack outputs read, by output key: DescribeStacks lists each output
 * as OutputKey, the output's logical id in the template
 * (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_Output.html,
 * https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/outputs-section-structure.html):
 * test/system/smoke.test.ts checks each against a synthesized template, so
 * a renamed output fails there, not on a team's first day.
 */
export const STACK_OUTPUTS = {
  graphqlUrl: 'GraphqlUrl',
  s3Endpoint: 'StorageEndpoint',
  gatewayUrl: 'GatewayUrl',
  sitesDomain: 'SitesDomain',
  firstAccountSecretArn: 'FirstAccountSecretArn',
} as const;

/**
 * A small public static site: an index.html and a stylesheet at the root,
 * no build command, on GitHub since 2011 (GitHub's own fork-me example).
 * `--repository` / `--branch` choose another.
 */
export const DEFAULT_REPOSITORY = 'https://github.com/octocat/Spoon-Knife.git';
export const DEFAULT_BRANCH = 'main';

/** The flags, each also a CAIRN_SMOKE_<NAME> variable (`--api-key` is CAIRN_SMOKE_API_KEY). */
export const TARGET_FLAGS = [
  'graphql',
  's3',
  'gateway',
  'sites-domain',
  'region',
  'api-key',
  'access-key-id',
  'secret-access-key',
  'bucket',
  'repository',
  'branch',
] as const;
export type TargetFlag = (typeof TARGET_FLAGS)[number];
export type TargetOptions = Partial<Record<TargetFlag | 'stack', string>>;

export function envName(flag: string): string {
  return `CAIRN_SMOKE_${flag.toUpperCase().replace(/-/g, '_')}`;
}

/** Flags first, then CAIRN_SMOKE_* variables. */
export function mergeEnv(flags: TargetOptions, env: NodeJS.ProcessEnv): TargetOptions {
  const merged: TargetOptions = {};
  for (const flag of [...TARGET_FLAGS, 'stack'] as const) {
    const value = flags[flag] ?? env[envName(flag)];
    if (value !== undefined && value !== '') merged[flag] = value;
  }
  return merged;
}

export class TargetError extends Error {}

export interface StackClients {
  cloudFormation: CloudFormationClient;
  secretsManager: SecretsManagerClient;
}

/** What the stack's outputs and its first account's secret say, as options (explicit ones are laid over them by the caller). */
export async function stackOptions(stackName: string, clients: StackClients): Promise<TargetOptions> {
  const { DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  const { GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
  const described = await clients.cloudFormation.send(new DescribeStacksCommand({ StackName: stackName }));
  const stack = described.Stacks?.[0];
  if (!stack) throw new TargetError(`no stack named ${stackName}`);
  const outputs = new Map((stack.Outputs ?? []).map((o) => [o.OutputKey ?? '', o.OutputValue ?? '']));
  const output = (key: string) => {
    const value = outputs.get(key);
    if (!value) throw new TargetError(`the stack ${stackName} has no output ${key} (status ${stack.StackStatus ?? 'unknown'})`);
    return value;
  };
  const secret = await clients.secretsManager.send(new GetSecretValueCommand({ SecretId: output(STACK_OUTPUTS.firstAccountSecretArn) }));
  const content = readSecretContent(secret.SecretString);
  if (content.kind !== 'credentials')
    throw new TargetError(
      content.kind === 'pending'
        ? "the first account's secret still holds its placeholder: the first deploy has not made the account"
        : "the first account's secret holds something Cairn did not write",
    );
  const first = content.value;
  return {
    graphql: output(STACK_OUTPUTS.graphqlUrl),
    s3: output(STACK_OUTPUTS.s3Endpoint),
    gateway: output(STACK_OUTPUTS.gatewayUrl),
    'sites-domain': output(STACK_OUTPUTS.sitesDomain),
    region: first.region,
    'api-key': first.apiKey,
    'access-key-id': first.accessKeyId,
    'secret-access-key': first.secretAccessKey,
    bucket: first.defaultBucket,
  };
}

/** The target from options; names what is missing, never a value. */
export function targetOf(options: TargetOptions): SmokeTarget {
  const need = (flag: TargetFlag): string => {
    const value = options[flag];
    if (!value) throw new TargetError(`--${flag} (or ${envName(flag)}) is needed without --stack`);
    return value;
  };
  return {
    graphqlUrl: need('graphql'),
    s3Endpoint: need('s3').replace(/\/+$/, ''),
    gatewayUrl: need('gateway').replace(/\/+$/, ''),
    sitesDomain: options['sites-domain'],
    region: options.region ?? 'us-east-1',
    apiKey: need('api-key'),
    accessKeyId: need('access-key-id'),
    secretAccessKey: need('secret-access-key'),
    bucket: options.bucket,
    repository: options.repository ?? DEFAULT_REPOSITORY,
    branch: options.branch ?? DEFAULT_BRANCH,
  };
}
