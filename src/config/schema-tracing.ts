/** The `tracing` section of the configuration: OpenTelemetry spans exported over OTLP/HTTP. */
import { z } from 'zod';

export const tracingSchema = z
  .object({
    otlpEndpoint: z
      .url({ protocol: /^https?$/ })
      .optional()
      .describe(
        'OTLP/HTTP traces endpoint (e.g. http://collector:4318/v1/traces, or ${MCP_PROXY_OTLP_ENDPOINT}); unset: no spans, no cost.',
      ),
    serviceName: z.string().min(1).default('mcp-negotiate-proxy').describe('service.name of the exported spans.'),
  })
  .strict()
  .describe('OpenTelemetry spans for each request, its upstream call and each transformer step.');
