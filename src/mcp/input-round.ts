/**
 * An input round in its one form, the 2026-07-28 one, whichever side speaks it: the server's
 * requests for client input during a call, keyed (`inputRequests`), and the client's answers under
 * the same keys (`inputResponses`). A legacy upstream's server→client requests are gathered into
 * one (fronts/modern/pooled-call.ts); a legacy client is asked one as server→client requests
 * (upstream/client-rounds.ts).
 */

/** What a server may ask a client during a call. */
export const INPUT_REQUEST_METHODS = new Set(['elicitation/create', 'sampling/createMessage', 'roots/list']);

export type InputRequests = Record<string, { method: string; params?: Record<string, unknown> }>;
/** The client's answers, by the keys of the round's input requests. */
export type InputResponses = Record<string, unknown>;
