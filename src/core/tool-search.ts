/**
 * Search instead of a catalog (the `tools=search` tag): a client that asks for it is listed two
 * tools of the proxy's own in place of the upstream's catalog. `search_tools {query}` returns the
 * tools that best match a description of the task, with their full definitions, and
 * `call_tool {name, arguments}` calls one; the tools stay callable by their real names. A legacy
 * session's list also gains the tools it found (with `notifications/tools/list_changed`), for
 * hosts that only call listed tools.
 *
 * Both are rewrites, so they take the path of any request: `search_tools` becomes the upstream's
 * `tools/list`, seen through the filters in the request's variant (a tool its variant hides is
 * never found; a compact client gets compact definitions), and its answer is then ranked here;
 * `call_tool` becomes the `tools/call` it names, checked by the filters like any other. Ranking is
 * BM25 (MiniSearch) over names, titles, descriptions and parameter names, in time linear in the
 * catalog's size.
 */
import { createHash } from 'node:crypto';
import MiniSearch from 'minisearch';
import { INVALID_PARAMS, isObject, type JsonRpcErrorObject, type JsonRpcNotification, type JsonRpcRequest } from '../jsonrpc/message.js';
import { SEARCH_TAG, type FeatureSet } from '../mcp/features.js';
import type { McpResult } from '../transformers/contract.js';

/** A listed tool: one with a name. */
export type Tool = McpResult & { name: string };

export const SEARCH_TOOL = 'search_tools';
export const CALL_TOOL = 'call_tool';

/** Tools a search returns by default, and at most. */
const DEFAULT_RESULTS = 5;
const MAX_RESULTS = 20;
/** The longest query read (a longer one is refused: ranking is linear in the query too). */
const MAX_QUERY_LENGTH = 500;
/** Distinct words of a query searched, at most. */
const MAX_QUERY_WORDS = 16;
/** Tools a legacy session's list keeps of those it found (the least recently found go first), and their bytes. */
const MAX_FOUND = 50;
const MAX_FOUND_BYTES = 256 * 1024;

const TOOLS: McpResult[] = [
  {
    name: SEARCH_TOOL,
    title: 'Search tools',
    description: `Finds the tools for a task, with their full definitions. Call one with ${CALL_TOOL}.`,
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'What you want to do.' },
        limit: { type: 'integer', minimum: 1, maximum: MAX_RESULTS },
      },
      required: ['query'],
    },
    annotations: { readOnlyHint: true },
  },
  {
    name: CALL_TOOL,
    title: 'Call a tool',
    description: `Calls a tool ${SEARCH_TOOL} found.`,
    inputSchema: { type: 'object', properties: { name: { type: 'string' }, arguments: { type: 'object' } }, required: ['name'] },
  },
];

/** The list of a client that searches, before it has found anything. */
export function searchTools(): { tools: McpResult[] } {
  return { tools: TOOLS };
}

/** What the search makes of a request: an error, or the request to send and what becomes of its result. */
export type SearchStep =
  | { error: JsonRpcErrorObject }
  | {
      request: JsonRpcRequest;
      /** The answer to the client's request, from the result of the one sent (absent: the result as it is). */
      finish?(result: McpResult): McpResult;
    };

export class ToolSearch {
  /** A legacy session's tools found, by name, least recently found first. */
  private readonly found = new Map<string, { tool: Tool; bytes: number }>();
  private foundBytes = 0;
  /** Whether the session's list changed since it was last told. */
  private unannounced = false;

  /** `session`: a legacy session, whose list gains the tools it finds. */
  constructor(private readonly session: boolean) {}

  /** Whether a client with these tags searches instead of listing. */
  static asked(features: FeatureSet): boolean {
    return features.satisfies(SEARCH_TAG);
  }

  /** The search's step for a request; undefined for one it leaves alone. */
  onRequest(req: JsonRpcRequest): SearchStep | undefined {
    if (req.method === 'tools/list') return { request: req, finish: () => this.listed() };
    if (req.method !== 'tools/call') return undefined;
    const params = req.params ?? {};
    const args = isObject(params.arguments) ? params.arguments : {};
    const meta = isObject(params._meta) ? { _meta: params._meta } : {};
    if (params.name === CALL_TOOL) {
      if (typeof args.name !== 'string' || args.name === '') return invalid(`${CALL_TOOL} needs "name", the tool to call, as a string`);
      if (args.arguments !== undefined && !isObject(args.arguments)) return invalid(`${CALL_TOOL}'s "arguments" must be an object`);
      // The call's own params stay (requestState, inputResponses, task): its input rounds and task are the named tool's.
      const { name: _name, arguments: _arguments, ...rest } = params;
      const call = { ...rest, name: args.name, ...(args.arguments === undefined ? {} : { arguments: args.arguments }) };
      return { request: { ...req, params: call } };
    }
    if (params.name !== SEARCH_TOOL) return undefined;
    const { query, limit = DEFAULT_RESULTS } = args;
    if (typeof query !== 'string' || query.trim() === '') return invalid(`${SEARCH_TOOL} needs "query", what you want to do, as a string`);
    if (query.length > MAX_QUERY_LENGTH) return invalid(`${SEARCH_TOOL}'s "query" is longer than ${MAX_QUERY_LENGTH} characters`);
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_RESULTS)
      return invalid(`${SEARCH_TOOL}'s "limit" must be an integer from 1 to ${MAX_RESULTS}`);
    const list: JsonRpcRequest = { jsonrpc: '2.0', id: req.id, method: 'tools/list', params: meta };
    return { request: list, finish: (result) => this.answer(rank(toolsOf(result), query, limit), result.nextCursor !== undefined) };
  }

  /** A notification the session is owed after an answer: its list changed (legacy sessions only). */
  announce(): JsonRpcNotification | undefined {
    if (!this.unannounced) return undefined;
    this.unannounced = false;
    return { jsonrpc: '2.0', method: 'notifications/tools/list_changed' };
  }

  /** The list a searching client gets: the two tools, and a legacy session's found ones. */
  private listed(): McpResult {
    return { tools: [...searchTools().tools, ...[...this.found.values()].map((f) => f.tool)] };
  }

  /** `partial`: the server lists more tools than its first page, which alone was searched. */
  private answer(tools: Tool[], partial: boolean): McpResult {
    if (this.session) for (const tool of tools) this.keep(tool);
    const more = partial ? ' The server lists more tools than were searched (its first page only); they stay callable by name.' : '';
    const text = tools.length
      ? JSON.stringify({ tools })
      : `No tool matches. Try other words, or fewer; ${SEARCH_TOOL} ranks by the words of names, descriptions and parameters.${more}`;
    return { content: [{ type: 'text', text }], structuredContent: { tools, ...(partial ? { partial: true } : {}) } };
  }

  private keep(tool: Tool): void {
    const name = tool.name;
    const old = this.found.get(name);
    const bytes = JSON.stringify(tool).length;
    if (old) {
      this.found.delete(name);
      this.foundBytes -= old.bytes;
    }
    if (bytes > MAX_FOUND_BYTES) return;
    this.found.set(name, { tool, bytes });
    this.foundBytes += bytes;
    if (!old || JSON.stringify(old.tool) !== JSON.stringify(tool)) this.unannounced = true;
    for (const [oldest, f] of this.found) {
      if (this.found.size <= MAX_FOUND && this.foundBytes <= MAX_FOUND_BYTES) break;
      this.found.delete(oldest);
      this.foundBytes -= f.bytes;
    }
  }
}

function invalid(message: string): { error: JsonRpcErrorObject } {
  return { error: { code: INVALID_PARAMS, message } };
}

/** The tools of a tools/list result that have a name. */
function toolsOf(result: McpResult): Tool[] {
  return Array.isArray(result.tools) ? result.tools.filter((t): t is Tool => isObject(t) && typeof t.name === 'string') : [];
}

/** The `limit` tools that match `query` best (BM25, names weighing most), best first. */
export function rank(tools: Tool[], query: string, limit: number): Tool[] {
  return indexOf(tools)
    .search(query)
    .slice(0, limit)
    .map((hit) => tools[Number(hit.id)]);
}

type Indexed = { id: number; name: string; title: string; description: string; parameters: string };

/** Indexes of the catalogs searched last, by their text: a catalog is indexed once while it stays the same. */
const indexes = new Map<string, MiniSearch<Indexed>>();
const KEPT_INDEXES = 4;

/**
 * The catalog's index. A query's words are searched each once, 16 at most; only words of 3 letters or more match as
 * prefixes, and of 5 or more with a typo or two: a query costs about as much as its distinct words, whatever it repeats.
 */
function indexOf(tools: Tool[]): MiniSearch<Indexed> {
  const docs = tools.map((tool, id) => ({
    id,
    name: tool.name,
    title: typeof tool.title === 'string' ? tool.title : '',
    description: typeof tool.description === 'string' ? tool.description : '',
    parameters: parameterText(tool.inputSchema),
  }));
  const key = createHash('sha256').update(JSON.stringify(docs)).digest('base64');
  let index = indexes.get(key);
  if (index) {
    indexes.delete(key);
  } else {
    index = new MiniSearch<Indexed>({
      fields: ['name', 'title', 'description', 'parameters'],
      tokenize: words,
      processTerm: term,
      searchOptions: {
        tokenize: (query) => [...new Set(words(query))].slice(0, MAX_QUERY_WORDS),
        boost: { name: 3, title: 2, parameters: 1.5 },
        prefix: (word) => word.length >= 3,
        fuzzy: (word) => (word.length >= 5 ? 0.2 : false),
        maxFuzzy: 2,
        combineWith: 'OR',
      },
    });
    index.addAll(docs);
    if (indexes.size >= KEPT_INDEXES) indexes.delete(indexes.keys().next().value!);
  }
  indexes.set(key, index);
  return index;
}

/** A tool's top-level parameter names and descriptions. */
function parameterText(schema: unknown): string {
  const properties = isObject(schema) && isObject(schema.properties) ? schema.properties : {};
  return Object.entries(properties)
    .map(([name, p]) => `${name} ${isObject(p) && typeof p.description === 'string' ? p.description : ''}`)
    .join(' ');
}

/** Words that say nothing of what a tool does. */
const STOP_WORDS = new Set([
  ...'a an and are as at be by can do for from get give how i in into is it'.split(' '),
  ...'me my of on or please some that the this to use want with you your'.split(' '),
]);

/** A word as it is indexed and searched: lower case, a plural's final "s" dropped; stop words not at all. */
function term(word: string): string | null {
  const lower = word.toLowerCase();
  if (STOP_WORDS.has(lower)) return null;
  return lower.length > 3 && lower.endsWith('s') && !lower.endsWith('ss') ? lower.slice(0, -1) : lower;
}

/** Words, with names split where they join words: `read_text_file`, `getFileInfo`, `get-sum`. */
function words(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}
