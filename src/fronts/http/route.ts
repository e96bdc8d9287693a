/**
 * The route a request matched, read once per request: fastify builds a new `routeOptions` object
 * on every read, and the guards, the access log, authentication and the limits each ask.
 * Matched routes, not raw URLs: the router decodes escapes (/mc%70 is /mcp).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The matched route's URL pattern; null until read (undefined: no route matched). */
    matchedRoute: string | undefined | null;
  }
}

/** Gives requests the field routeOf fills (once per server, whoever asks first). */
export function trackRoutes(app: FastifyInstance): void {
  if (!app.hasRequestDecorator('matchedRoute')) app.decorateRequest('matchedRoute', null);
}

export function routeOf(req: FastifyRequest): string | undefined {
  if (req.matchedRoute == null) req.matchedRoute = req.routeOptions.url;
  return req.matchedRoute;
}
