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
  type FieldNode,
  type GraphQLCompositeType,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import { DEFAULT_LIMIT, MAX_LIMIT } from './pagination.js';

export const LIMITS = {
  /** Nesting of fields. Cairn's own types nest at most 6 deep; the standard introspection query is 15. */
  depth: 16,
  aliases: 20,
  cost: 10_000,
  /** Lexical tokens in the document (a full site query is about 150, the standard introspection query 184). */
  tokens: 2_500,
  /** Request body bytes. */
  bodyBytes: 1024 * 1024,
} as const;

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
class Measure {
  private readonly memo = new Map<string, number>();
  /** Fragments being measured, to stop at cycles (NoFragmentCyclesRule reports them). */
  private readonly open = new Set<string>();

  constructor(private readonly context: ValidationContext) {}

  private fragment(name: string, key: string, measure: (set: SelectionSetNode, type: GraphQLCompositeType | undefined) => number): number {
    const memoKey = `${key}\0${name}`;
    const known = this.memo.get(memoKey);
    if (known !== undefined) return known;
    const fragment = this.context.getFragment(name);
    if (!fragment || this.open.has(memoKey)) return 0;
    this.open.add(memoKey);
    const value = measure(fragment.selectionSet, this.context.getSchema().getType(fragment.typeCondition.name.value) as GraphQLCompositeType | undefined);
    this.open.delete(memoKey);
    this.memo.set(memoKey, value);
    return value;
  }

  private each(set: SelectionSetNode, type: GraphQLCompositeType | undefined, onField: (field: FieldNode, parent: GraphQLCompositeType | undefined) => number, onFragment: (name: string) => number, combine: 'max' | 'sum'): number {
    let total = 0;
    const add = (v: number) => (total = combine === 'max' ? Math.max(total, v) : total + v);
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) add(onField(selection, type));
      else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const narrowed = selection.typeCondition ? (this.context.getSchema().getType(selection.typeCondition.name.value) as GraphQLCompositeType | undefined) : type;
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
}

/** Depth, aliases and cost of each operation, against LIMITS. */
export const OperationLimitsRule: ValidationRule = (context): ASTVisitor => ({
  OperationDefinition(node) {
    const schema = context.getSchema();
    const measure = new Measure(context);
    const rootType =
      (node.operation === 'query' ? schema.getQueryType() : node.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType()) ?? undefined;
    const depth = measure.depth(node.selectionSet, rootType);
    if (depth > LIMITS.depth) context.reportError(limitError('Query depth', depth, LIMITS.depth));
    const aliases = measure.aliases(node.selectionSet);
    if (aliases > LIMITS.aliases) context.reportError(limitError('Number of aliases', aliases, LIMITS.aliases));
    const cost = measure.cost(node.selectionSet, rootType, undefined, true);
    if (cost > LIMITS.cost) context.reportError(limitError('Query cost', cost, LIMITS.cost));
    return false;
  },
});

/** The rules added to GraphQL's own (which already bound introspection's nested lists: MaxIntrospectionDepthRule). */
export const limitRules: ValidationRule[] = [OperationLimitsRule];
