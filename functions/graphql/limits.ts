/**
 * Limits on what one request may ask for, checked before anything runs
 * (Apollo caches each distinct query's validation, so they cost nothing on
 * repeats). Documents over a limit fail with GRAPHQL_VALIDATION_FAILED
 * (HTTP 400); documents over the token limit with GRAPHQL_PARSE_FAILED.
 *
 * Cost is an upper estimate of the work a query asks for: 1 per field,
 * ROOT_FIELD_COST per root field (each is at least one database round
 * trip), and everything below a list field multiplied by the list's
 * length: the page size for a page of sites or deploys (the `limit` given,
 * 20 without one, MAX_LIMIT when it is a variable), ESTIMATED_LIST_LENGTH
 * for other lists.
 *
 * Answer bytes are an upper estimate of the large values an answer may
 * carry: each field of LARGE_FIELDS (a deploy's log) at its largest size,
 * times the same list lengths. The estimate refuses a document that asks for
 * too many logs before anything is read; at run time each log is charged its
 * real size against the request's budget, and the process holds at most so
 * many bytes of them at once (answer.ts).
 */
import {
  GraphQLError,
  getNamedType,
  getNullableType,
  isListType,
  isInterfaceType,
  isObjectType,
  Kind,
  type ASTVisitor,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type GraphQLCompositeType,
  type SelectionSetNode,
  type ValidationRule,
} from 'graphql';
import { MAX_LOG_BYTES } from '../core/logs/deploy-log.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from './pagination.js';

const MiB = 1024 * 1024;

export const LIMITS = {
  /** Nesting of fields. Cairn's own types nest at most 6 deep; the standard introspection query is 15. */
  depth: 16,
  aliases: 20,
  cost: 10_000,
  /** Lexical tokens in the document (a full site query is about 150, the standard introspection query 184). */
  tokens: 2_500,
  /** Request body bytes. */
  bodyBytes: 1024 * 1024,
  /**
   * Estimated answer bytes (LARGE_FIELDS at their largest): 16 deploy logs
   * of 4 MiB. The web app and `cairn deploy --watch` ask for one log at a
   * time; a site's published and latest deploys with their logs are 8 MiB;
   * a page of 10 deploys with their logs (usually a few KiB each) passes,
   * the default page of 20 does not.
   */
  estimatedAnswerBytes: 64 * MiB,
  /**
   * Bytes of large values one answer may really carry (logs as read): four
   * logs at their largest. Past it the request fails with RESPONSE_TOO_LARGE.
   */
  answerBytes: 16 * MiB,
  /**
   * The same in AWS: one log at its largest. The GraphQL function answers
   * through a buffered Lambda invocation, whose response payload is at most
   * 6 MB ("Invocation payload (request and response): 6 MB each for
   * synchronous", https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html);
   * an answer past it would be the API's 502 instead of RESPONSE_TOO_LARGE.
   * 4 MiB leaves room for JSON escaping and the rest of the answer.
   */
  lambdaAnswerBytes: 4 * MiB,
  /**
   * Bytes of large values all answers in progress may hold together, from
   * their reservation to the end of writing them: four answers at their
   * budget. The issue that set these: three requests of 20 pages of logs
   * held 3.9 GB at once.
   */
  answerBytesInFlight: 64 * MiB,
  /** How long a request waits for room at the gate before it is SERVICE_UNAVAILABLE (503). */
  answerWaitMs: 10_000,
} as const;

/**
 * Fields whose values may be large, by `Type.field`, at the most bytes one
 * value holds. Everything else the API answers is read from DynamoDB items
 * (400 KB each at most) and bounded by the cost limit's count of them.
 */
export const LARGE_FIELDS: Readonly<Record<string, number>> = {
  'Deploy.log': MAX_LOG_BYTES,
};

const ROOT_FIELD_COST = 10;
const ESTIMATED_LIST_LENGTH = 10;

function limitError(what: string, actual: number, max: number): GraphQLError {
  return new GraphQLError(`${what} ${actual} exceeds the limit of ${max}`, { extensions: { limit: { what, actual, max } } });
}

function fieldDef(parent: GraphQLCompositeType | undefined, field: FieldNode) {
  if (!parent || !(isObjectType(parent) || isInterfaceType(parent))) return undefined;
  return parent.getFields()[field.name.value];
}

const childType = (parent: GraphQLCompositeType | undefined, field: FieldNode) => {
  const type = fieldDef(parent, field)?.type;
  return type ? (getNamedType(type) as GraphQLCompositeType) : undefined;
};

/** The page size a paged field asks for: its `limit` literal, 20 without one or with null, the cap when a variable. */
function pageSizeOf(field: FieldNode): number {
  const arg = field.arguments?.find((a) => a.name.value === 'limit');
  if (!arg || arg.value.kind === Kind.NULL) return DEFAULT_LIMIT;
  if (arg.value.kind === Kind.INT) return Math.max(1, Math.min(Number(arg.value.value), MAX_LIMIT));
  return MAX_LIMIT;
}

/**
 * Depth, aliases and cost of selection sets, each fragment worked out once
 * per context and remembered: a document that spreads fragments inside
 * fragments costs its size to measure, never its expansion.
 */
/** What measuring needs of a document: its fragments and its schema (a ValidationContext has both). */
interface Document {
  getFragment(name: string): FragmentDefinitionNode | null | undefined;
  getSchema(): GraphQLSchema;
}

class Measure {
  private readonly memo = new Map<string, number>();
  /** Fragments being measured, to stop at cycles (NoFragmentCyclesRule reports them). */
  private readonly open = new Set<string>();

  constructor(private readonly context: Document) {}

  private fragment(name: string, key: string, measure: (set: SelectionSetNode, type: GraphQLCompositeType | undefined) => number): number {
    const memoKey = `${key}\0${name}`;
    const known = this.memo.get(memoKey);
    if (known !== undefined) return known;
    const fragment = this.context.getFragment(name);
    if (!fragment || this.open.has(memoKey)) return 0;
    this.open.add(memoKey);
    const value = measure(
      fragment.selectionSet,
      this.context.getSchema().getType(fragment.typeCondition.name.value) as GraphQLCompositeType | undefined,
    );
    this.open.delete(memoKey);
    this.memo.set(memoKey, value);
    return value;
  }

  private each(
    set: SelectionSetNode,
    type: GraphQLCompositeType | undefined,
    onField: (field: FieldNode, parent: GraphQLCompositeType | undefined) => number,
    onFragment: (name: string) => number,
    combine: 'max' | 'sum',
  ): number {
    let total = 0;
    const add = (v: number) => (total = combine === 'max' ? Math.max(total, v) : total + v);
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) add(onField(selection, type));
      else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const narrowed = selection.typeCondition
          ? (this.context.getSchema().getType(selection.typeCondition.name.value) as GraphQLCompositeType | undefined)
          : type;
        add(this.each(selection.selectionSet, narrowed, onField, onFragment, combine));
      } else add(onFragment(selection.name.value));
    }
    return total;
  }

  depth = (set: SelectionSetNode, type: GraphQLCompositeType | undefined): number =>
    this.each(
      set,
      type,
      (field, parent) => 1 + (field.selectionSet ? this.depth(field.selectionSet, childType(parent, field)) : 0),
      (name) => this.fragment(name, 'depth', this.depth),
      'max',
    );

  aliases = (set: SelectionSetNode): number =>
    this.each(
      set,
      undefined,
      (field) => (field.alias ? 1 : 0) + (field.selectionSet ? this.aliases(field.selectionSet) : 0),
      (name) => this.fragment(name, 'aliases', (s) => this.aliases(s)),
      'sum',
    );

  /** `pageLength` is the length of the list fields directly in this selection: a page's size, when this is a connection. */
  cost = (set: SelectionSetNode, type: GraphQLCompositeType | undefined, pageLength: number | undefined, root: boolean): number =>
    this.each(
      set,
      type,
      (field, parent) => {
        const def = fieldDef(parent, field);
        const length = def && isListType(getNullableType(def.type)) ? (pageLength ?? ESTIMATED_LIST_LENGTH) : 1;
        const paged = def?.args.some((a) => a.name === 'limit') ? pageSizeOf(field) : undefined;
        const below = field.selectionSet ? this.cost(field.selectionSet, childType(parent, field), paged, false) : 0;
        return (root ? ROOT_FIELD_COST : 1) + length * below;
      },
      (name) => this.fragment(name, `cost:${pageLength}:${root}`, (s, t) => this.cost(s, t, pageLength, root)),
      'sum',
    );

  /** Answer bytes: each large field at its largest, times the lists it is under (counted as for cost). */
  bytes = (set: SelectionSetNode, type: GraphQLCompositeType | undefined, pageLength: number | undefined): number =>
    this.each(
      set,
      type,
      (field, parent) => {
        const def = fieldDef(parent, field);
        if (!def || !parent) return 0;
        const length = isListType(getNullableType(def.type)) ? (pageLength ?? ESTIMATED_LIST_LENGTH) : 1;
        const own = LARGE_FIELDS[`${parent.name}.${field.name.value}`] ?? 0;
        const paged = def.args.some((a) => a.name === 'limit') ? pageSizeOf(field) : undefined;
        const below = field.selectionSet ? this.bytes(field.selectionSet, childType(parent, field), paged) : 0;
        return length * (own + below);
      },
      (name) => this.fragment(name, `bytes:${pageLength}`, (s, t) => this.bytes(s, t, pageLength)),
      'sum',
    );
}

const rootTypeOf = (schema: GraphQLSchema, operation: OperationDefinitionNode) =>
  (operation.operation === 'query'
    ? schema.getQueryType()
    : operation.operation === 'mutation'
      ? schema.getMutationType()
      : schema.getSubscriptionType()) ?? undefined;

/** The answer-bytes estimate of one operation of a (valid) document, as the validation rule measures it. */
export function estimateAnswerBytes(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): number {
  const fragments = new Map(document.definitions.flatMap((d) => (d.kind === Kind.FRAGMENT_DEFINITION ? [[d.name.value, d] as const] : [])));
  const measure = new Measure({ getFragment: (name) => fragments.get(name), getSchema: () => schema });
  return measure.bytes(operation.selectionSet, rootTypeOf(schema, operation), undefined);
}

function bytesError(actual: number, max: number): GraphQLError {
  const m = (b: number) => `${(b / MiB).toFixed(b % MiB === 0 ? 0 : 1)} MiB`;
  return new GraphQLError(
    `Estimated answer size ${m(actual)} exceeds the limit of ${m(max)}: a deploy's log counts as ${m(MAX_LOG_BYTES)} (its largest size) for every deploy it may be asked of, so ask for logs a few deploys at a time`,
    { extensions: { limit: { what: 'Answer bytes', actual, max } } },
  );
}

/** Depth, aliases, cost and answer bytes of each operation, against LIMITS. */
export const OperationLimitsRule: ValidationRule = (context): ASTVisitor => ({
  OperationDefinition(node) {
    const measure = new Measure(context);
    const rootType = rootTypeOf(context.getSchema(), node);
    const depth = measure.depth(node.selectionSet, rootType);
    if (depth > LIMITS.depth) context.reportError(limitError('Query depth', depth, LIMITS.depth));
    const aliases = measure.aliases(node.selectionSet);
    if (aliases > LIMITS.aliases) context.reportError(limitError('Number of aliases', aliases, LIMITS.aliases));
    const cost = measure.cost(node.selectionSet, rootType, undefined, true);
    if (cost > LIMITS.cost) context.reportError(limitError('Query cost', cost, LIMITS.cost));
    const bytes = measure.bytes(node.selectionSet, rootType, undefined);
    if (bytes > LIMITS.estimatedAnswerBytes) context.reportError(bytesError(bytes, LIMITS.estimatedAnswerBytes));
    return false;
  },
});

/** The rules added to GraphQL's own (which already bound introspection's nested lists: MaxIntrospectionDepthRule). */
export const limitRules: ValidationRule[] = [OperationLimitsRule];
