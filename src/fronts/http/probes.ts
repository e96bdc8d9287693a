/**
 * What orchestrators and operators ask: `/metrics` (Prometheus), `/healthz` (liveness: the
 * process serves) and `/readyz` (readiness: the upstream is usable now, cached; 503 while
 * draining). Details (the upstream, the cause of unreadiness, the session count) go only to a
 * caller on this machine naming an allowed Host (not a page rebinding a name to 127.0.0.1), or
 * to one with a valid credential; everyone else gets the status alone, which is all probes act on.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Metrics } from '../../ops/metrics.js';
import type { ReadinessReport } from '../../ops/readiness.js';
import type { Authenticate } from './authentication.js';
import { isLoopbackAddress } from './guards.js';

export interface ProbeOptions {
  metrics: Metrics;
  /** What the probes say about the upstream (masked). */
  health(): Record<string, unknown>;
  readiness(): Promise<ReadinessReport>;
  sessions(): number;
  draining(): boolean;
  hostOk(host: string | undefined): boolean;
  /** Present when authentication is on. */
  authenticate?: Authenticate;
  /** Whether X-Forwarded-For is believed (listen.trustProxy): then req.ip is the real client. */
  trustsForwarding: boolean;
}

export function registerProbes(app: FastifyInstance, o: ProbeOptions): void {
  const mayInspect = async (req: FastifyRequest): Promise<boolean> => {
    const forwarded = req.headers['x-forwarded-for'] !== undefined && !o.trustsForwarding;
    if (!forwarded && isLoopbackAddress(req.ip) && o.hostOk(req.headers.host)) return true;
    return o.authenticate !== undefined && 'principal' in (await o.authenticate(req));
  };
  app.get('/metrics', async (_req, reply) => {
    reply.type(o.metrics.registry.contentType).send(await o.metrics.render());
  });
  app.get('/healthz', async (req, reply) => {
    if (!(await mayInspect(req))) return reply.send({ status: 'ok' });
    reply.send({ status: 'ok', upstream: o.health(), sessions: o.sessions() });
  });
  app.get('/readyz', async (req, reply) => {
    const details = await mayInspect(req);
    if (o.draining())
      return reply.code(503).send({ status: 'draining', ready: false, ...(details ? { cause: 'the proxy is shutting down' } : {}) });
    const report = await o.readiness();
    const status = report.ready ? 'ready' : 'unready';
    reply.code(report.ready ? 200 : 503).send(details ? { status, ...report, upstream: o.health() } : { status, ready: report.ready });
  });
}
