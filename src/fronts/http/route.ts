/**
 * The route a request matched, read once per request: fastify builds a new `routeOptions` object
 * on every read, and the guards, the access log, authentication and the limits each ask.
 * Matched routes, not raw URLs: the router decodes escapes (/mc%70 is /mcp). A route that serves
 * the MCP endpoint under another path (a profile's) names the endpoint in its config, and counts
 * as it: every hook of the endpoint runs for it.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The endpoint this route serves under a path of its own. */
    endpoint?: string;
  }
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
  if (req.matchedRoute == null) {
    const options = req.routeOptions;
    req.matchedRoute = options.config?.endpoint ?? options.url;
  }
  return req.matchedRoute;
}
