/** The `replicas` section of the configuration: several proxies behind a load balancer, sharing one sealing secret. */
import { z } from 'zod';

export const replicasSchema = z
  .object({
    id: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'letters, digits, "_", ".", ":" and "-", at most 64')
      .optional()
      .describe("This replica's name in session tokens and messages (e.g. ${HOSTNAME}). Default: the host name and process id."),
    secret: z
      .string()
      .min(32, 'at least 32 characters (e.g. openssl rand -base64 32)')
      .optional()
      .describe(
        'Secret shared by every replica (e.g. ${MCP_PROXY_SECRET}): seals session ids and requestState, ' +
          'so any replica serves any client, and the client address of a request one replica ' +
          'forwards to another. Unset: a random key per process; tokens then die with it.',
      ),
    previousSecrets: z
      .array(z.string().min(32))
      .default([])
      .describe(
        'Secrets that still open tokens sealed before a rotation (never used to seal). Drop them once the longest session has ended.',
      ),
    url: z
      .url({ protocol: /^https?$/ })
      .optional()
      .describe(
        "This replica's own MCP URL as other replicas reach it (e.g. http://10.0.0.5:8080/mcp): " +
          'a modern retry or task request, or a request of a legacy session whose upstream runs here, ' +
          'that lands elsewhere is forwarded here. Unset: such a request gets a clear error.',
      ),
  })
  .strict()
  .describe('Running several replicas behind a load balancer; they share only `secret`.');
