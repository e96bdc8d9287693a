/**
 * Who a request comes from, as every front reports it: the authenticated principal ('' without
 * authentication) and the key per-client limits count (the principal, or the client's address).
 */
export interface Requester {
  principal: string;
  client: string;
}
