/**
 * Who a request comes from, as every front reports it: the authenticated principal ('' without
 * authentication) and the key per-client limits count (the principal, or the client's address).
 */
export interface Requester {
  principal: string;
  client: string;
  /** The endpoint path the request was sent to (HTTP): a profile may be chosen by it. */
  path?: string;
  /** The request's MCP-Features header (HTTP): tags its host declares for a client that cannot. */
  featuresHeader?: string;
}
