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
  type GraphQLSchema,
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

interface Walk {
  context: ValidationContext;
  schema: GraphQLSchema;
  /** Fragments on the current path, to stop at cycles (NoFragmentCyclesRule reports them). */
  path: Set<string>;
}

function selectionsOf(walk: Walk, set: SelectionSetNode, type: GraphQLCompositeType | undefined, visit: (field: FieldNode, parent: GraphQLCompositeType | undefined) => void) {
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) visit(selection, type);
    else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const narrowed = selection.typeCondition ? (walk.schema.getType(selection.typeCondition.name.value) as GraphQLCompositeType | undefined) : type;
      selectionsOf(walk, selection.selectionSet, narrowed, visit);
    } else {
      const name = selection.name.value;
      const fragment = walk.context.getFragment(name);
      if (!fragment || walk.path.has(name)) continue;
      walk.path.add(name);
      selectionsOf(walk, fragment.selectionSet, walk.schema.getType(fragment.typeCondition.name.value) as GraphQLCompositeType | undefined, visit);
      walk.path.delete(name);
    }
  }
}

function fieldDef(parent: GraphQLCompositeType | undefined, field: FieldNode) {
  if (!parent || !(isObjectType(parent) || isInterfaceType(parent))) return undefined;
  return parent.getFields()[field.name.value];
}

const childType = (parent: GraphQLCompositeType | undefined, field: FieldNode) => {
  const type = fieldDef(parent, field)?.type;
  return type ? (getNamedType(type) as GraphQLCompositeType) : undefined;
};

function depthOf(walk: Walk, set: SelectionSetNode, type: GraphQLCompositeType | undefined): number {
  let max = 0;
  selectionsOf(walk, set, type, (field, parent) => {
    const child = field.selectionSet ? depthOf(walk, field.selectionSet, childType(parent, field)) : 0;
    max = Math.max(max, 1 + child);
  });
  return max;
}

function aliasesOf(walk: Walk, set: SelectionSetNode): number {
  let count = 0;
  selectionsOf(walk, set, undefined, (field) => {
    if (field.alias) count++;
    if (field.selectionSet) count += aliasesOf(walk, field.selectionSet);
  });
  return count;
}

/** The page size a paged field asks for: its `limit` literal, 20 without one, the cap when a variable. */
function pageSizeOf(field: FieldNode): number | undefined {
  const arg = field.arguments?.find((a) => a.name.value === 'limit');
  if (!arg) return undefined;
  if (arg.value.kind === Kind.INT) return Math.max(1, Math.min(Number(arg.value.value), MAX_LIMIT));
  if (arg.value.kind === Kind.NULL) return DEFAULT_LIMIT;
  return MAX_LIMIT;
}

/** `pageLength` is the length of the list fields directly in this selection: a page's size, when this is a connection. */
function costOf(walk: Walk, set: SelectionSetNode, type: GraphQLCompositeType | undefined, pageLength: number | undefined, root: boolean): number {
  let total = 0;
  selectionsOf(walk, set, type, (field, parent) => {
    const def = fieldDef(parent, field);
    const length = def && isListType(getNullableType(def.type)) ? (pageLength ?? ESTIMATED_LIST_LENGTH) : 1;
    const paged = def?.args.some((a) => a.name === 'limit') ? (pageSizeOf(field) ?? DEFAULT_LIMIT) : undefined;
    const below = field.selectionSet ? costOf(walk, field.selectionSet, childType(parent, field), paged, false) : 0;
    total += (root ? ROOT_FIELD_COST : 1) + length * below;
  });
  return total;
}

/** Depth, aliases and cost of each operation, against LIMITS. */
export const OperationLimitsRule: ValidationRule = (context): ASTVisitor => ({
  OperationDefinition(node) {
    const schema = context.getSchema();
    const walk: Walk = { context, schema, path: new Set() };
    const rootType =
      (node.operation === 'query' ? schema.getQueryType() : node.operation === 'mutation' ? schema.getMutationType() : schema.getSubscriptionType()) ?? undefined;
    const depth = depthOf(walk, node.selectionSet, rootType);
    if (depth > LIMITS.depth) context.reportError(limitError('Query depth', depth, LIMITS.depth));
    const aliases = aliasesOf(walk, node.selectionSet);
    if (aliases > LIMITS.aliases) context.reportError(limitError('Number of aliases', aliases, LIMITS.aliases));
    const cost = costOf(walk, node.selectionSet, rootType, undefined, true);
    if (cost > LIMITS.cost) context.reportError(limitError('Query cost', cost, LIMITS.cost));
    return false;
  },
});

/** The rules added to GraphQL's own (which already bound introspection's nested lists: MaxIntrospectionDepthRule). */
export const limitRules: ValidationRule[] = [OperationLimitsRule];
