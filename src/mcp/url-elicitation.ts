/**
 * URL-mode elicitation asks the user to open a URL the server chose, and a client may open it or
 * show it as a link. Only web URLs reach clients: a `javascript:`, `file:` or `data:` URL opened on
 * the user's side runs or reads there, whatever the server meant. An upstream's URL elicitation
 * with any other scheme is refused where it enters the proxy, in each of its three forms: an
 * `elicitation/create` request (legacy), an `input_required` round's input request (2026-07-28)
 * and a `-32042` error's `elicitations`.
 */
import { isObject, type JsonRpcErrorObject } from '../jsonrpc/message.js';
import { ProxyError, URL_ELICITATION_REQUIRED } from '../jsonrpc/errors.js';

/** The schemes a URL elicitation may use. */
export const ELICITATION_URL_SCHEMES: readonly string[] = ['https:', 'http:'];

/** Why an `elicitation/create`'s params may not be put to a client; undefined when they may (or it is no URL elicitation). */
export function refusedElicitation(method: string, params: unknown): string | undefined {
  if (method !== 'elicitation/create' || !isObject(params) || params.mode !== 'url') return undefined;
  return refusedUrl(params.url);
}

/** The same for each input request of an `input_required` round. */
export function refusedInputRequests(inputRequests: unknown): string | undefined {
  if (!isObject(inputRequests)) return undefined;
  for (const entry of Object.values(inputRequests)) {
    const refused = isObject(entry) && typeof entry.method === 'string' ? refusedElicitation(entry.method, entry.params) : undefined;
    if (refused) return refused;
  }
  return undefined;
}

/** The same for each elicitation a `-32042` (URL elicitation required) error names. */
export function refusedUrlElicitations(error: JsonRpcErrorObject | undefined): string | undefined {
  if (error?.code !== URL_ELICITATION_REQUIRED || !isObject(error.data) || !Array.isArray(error.data.elicitations)) return undefined;
  for (const e of error.data.elicitations) {
    const refused = isObject(e) ? refusedUrl(e.url) : undefined;
    if (refused) return refused;
  }
  return undefined;
}

/** What the call gets when its upstream asked for a URL no client may be given (`reason`, from the checks above). */
export function refusedUrlError(reason: string): ProxyError {
  return new ProxyError('UPSTREAM_PROTOCOL', `The upstream asked for ${reason}; the proxy refused it`);
}

function refusedUrl(url: unknown): string | undefined {
  if (typeof url !== 'string') return 'a URL elicitation without a URL';
  let scheme: string;
  try {
    scheme = new URL(url).protocol;
  } catch {
    return 'a URL elicitation whose URL is not an absolute URL';
  }
  return ELICITATION_URL_SCHEMES.includes(scheme)
    ? undefined
    : `a URL elicitation with a ${JSON.stringify(scheme.slice(0, 32))} URL (only https: and http: URLs are put to clients)`;
}
