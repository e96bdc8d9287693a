/**
 * The era words, one home for every layer above the JSON-RPC one (whose error forms spell the
 * two words out). A client's request is of one era; an upstream may speak both.
 */

/** The era a client speaks, and so an exchange's: legacy (the initialize handshake, up to 2025-11-25) or modern (2026-07-28, stateless). */
export type Era = 'legacy' | 'modern';

/** The era an upstream speaks: one of a client's, or `dual` (both, each client spoken to in its own). */
export type ServerEra = Era | 'dual';
