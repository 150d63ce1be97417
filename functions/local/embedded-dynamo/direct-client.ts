/**
 * The document client's `send`, straight to an embedded engine in this
 * process (engine.ts): the stores keep building the same lib-dynamodb
 * commands they send to DynamoDB, but locally a command skips the AWS SDK's
 * middleware stack (endpoint resolution, retries, user agent, log filters,
 * schema serde), which cost about 200 µs of the request thread per call, as
 * much as the engine's own work. What the SDK does that callers can see is
 * kept:
 *
 * - input marshalled and output unmarshalled with lib-dynamodb's own key
 *   paths (each command's `inputKeyNodes` / `outputKeyNodes`) and the
 *   client's marshalling options;
 * - binary attribute values travel as base64, as on the wire;
 * - errors are the SDK's exception classes (TransactionCanceledException
 *   with its CancellationReasons, ConditionalCheckFailedException, ...),
 *   named from the answer's `__type` as the SDK's deserializer names them,
 *   with `$metadata.httpStatusCode`.
 *
 * Table operations (CreateTable, DescribeTable) go through the low-level
 * client and the SDK as before.
 */
import * as DynamoDB from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall, type marshallOptions as MarshallOptions } from '@aws-sdk/util-dynamodb';

/** Runs one DynamoDB operation on the engine: its JSON request in, its status and JSON answer out. */
export type EngineCall = (operation: string, body: string) => Promise<{ status: number; body: string }>;

/** lib-dynamodb's description of where attribute values sit in a command's input or output. */
type KeyNodes = Record<string, unknown> | unknown[] | null | undefined;

interface DocumentCommand {
  input: Record<string, unknown>;
  inputKeyNodes: KeyNodes;
  outputKeyNodes: KeyNodes;
  clientCommand: object;
}

/** Operation names by low-level command class (`TransactWriteItemsCommand` -> `TransactWriteItems`). */
const OPERATIONS = new Map<unknown, string>();
/** The SDK's modelled exceptions by name. */
const EXCEPTIONS = new Map<string, new (opts: any) => Error>();
for (const [name, value] of Object.entries(DynamoDB)) {
  if (typeof value !== 'function') continue;
  if (name.endsWith('Command')) OPERATIONS.set(value, name.slice(0, -'Command'.length));
  else if (value.prototype instanceof DynamoDB.DynamoDBServiceException) EXCEPTIONS.set(name, value as new (opts: any) => Error);
}

/** Applies `fn` to the values `nodes` points at, as lib-dynamodb's marshalling walks them. */
function walk(value: unknown, fn: (v: any) => unknown, nodes: KeyNodes): unknown {
  if (value === undefined) return undefined;
  if (nodes == null) return fn(value);
  const keys = Object.keys(nodes);
  const obj = value as Record<string, unknown>;
  if (keys.length === 0 || (keys.length === 1 && keys[0] === '*')) {
    // `{}` / `[]`: every member is a value; `{'*': n}`: every member is walked with n.
    const inner = keys.length === 0 ? null : (nodes as Record<string, KeyNodes>)['*'];
    if (Array.isArray(value)) return value.filter((v) => typeof v !== 'function').map((v) => walk(v, fn, inner));
    const out: Record<string, unknown> = {};
    for (const k in obj) {
      const v = walk(obj[k], fn, inner);
      if (v !== undefined && typeof v !== 'function') out[k] = v;
    }
    return out;
  }
  const out: Record<string, unknown> = Array.isArray(value) ? ([...value] as any) : { ...obj };
  for (const k of keys) {
    const v = walk(obj[k], fn, (nodes as Record<string, KeyNodes>)[k]);
    if (v !== undefined && typeof v !== 'function') out[k] = v;
  }
  return out;
}

const toBase64 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');

/** JSON as the wire carries it: binary values as base64 (read from the holder, before Buffer's toJSON). */
function encodeBinary(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const original = this[key];
  if (original instanceof Uint8Array) return toBase64(original);
  if (key === 'BS' && Array.isArray(original)) return original.map((v) => (v instanceof Uint8Array ? toBase64(v) : v));
  return value;
}

/** Whether a marshalled input holds a binary value anywhere (most hold none, and a replacer costs a call per value). */
function holdsBinary(value: unknown): boolean {
  if (value instanceof Uint8Array) return true;
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) return value.some(holdsBinary);
  for (const k in value) if (holdsBinary((value as Record<string, unknown>)[k])) return true;
  return false;
}

/**
 * Whether an answer holds a binary value: a `"B":"` or `"BS":[` pair, which
 * JSON text cannot hold inside a string (its quotes are escaped there).
 */
const answerHoldsBinary = (text: string) => text.includes('"B":"') || text.includes('"BS":[');

function decodeBinary(key: string, value: unknown): unknown {
  if (key === 'B' && typeof value === 'string') return new Uint8Array(Buffer.from(value, 'base64'));
  if (key === 'BS' && Array.isArray(value)) return value.map((v) => (typeof v === 'string' ? new Uint8Array(Buffer.from(v, 'base64')) : v));
  return value;
}

const metadata = (status: number) => ({ httpStatusCode: status, requestId: 'embedded', attempts: 1, totalRetryDelay: 0 });

/** The exception the SDK's deserializer would throw for this error answer. */
export function engineError(status: number, json: Record<string, unknown>): Error {
  const { __type, message, Message, ...fields } = json;
  const name =
    String(__type ?? '')
      .split('#')
      .pop() || 'UnknownError';
  const opts = { ...fields, $metadata: metadata(status), message: String(message ?? Message ?? name) };
  const Exception = EXCEPTIONS.get(name);
  if (Exception) return new Exception(opts);
  return new DynamoDB.DynamoDBServiceException({ ...opts, name, $fault: status >= 500 ? 'server' : 'client' });
}

/**
 * Replaces `doc.send` with the direct path for every lib-dynamodb command;
 * anything else still goes the SDK's way.
 */
export function sendDirectly(doc: { send: (...args: any[]) => Promise<any> }, call: EngineCall, options: MarshallOptions): void {
  const viaSdk = doc.send.bind(doc);
  const marshalling = { convertTopLevelContainer: true, ...options };
  const unmarshalling = { convertWithoutMapWrapper: true };
  doc.send = async (command: DocumentCommand, ...rest: unknown[]) => {
    const operation = command?.clientCommand && OPERATIONS.get(command.clientCommand.constructor);
    if (!operation || rest.some((r) => typeof r === 'function')) return viaSdk(command, ...rest);
    const input = walk(command.input, (v) => marshall(v, marshalling), command.inputKeyNodes);
    // A replacer or reviver runs for every value, several times the cost of
    // the plain call (20 ms a page of 1000 listed objects): only with binary values.
    const answer = await call(operation, holdsBinary(input) ? JSON.stringify(input, encodeBinary) : JSON.stringify(input));
    const json = (answerHoldsBinary(answer.body) ? JSON.parse(answer.body, decodeBinary) : JSON.parse(answer.body)) as Record<
      string,
      unknown
    >;
    if (answer.status !== 200) throw engineError(answer.status, json);
    const output = walk(json, (v) => unmarshall(v, unmarshalling), command.outputKeyNodes) as Record<string, unknown>;
    output.$metadata = metadata(200);
    return output;
  };
}
