/**
 * Modern requests on the Streamable HTTP endpoint: one message per POST, validated against
 * `_meta` and the mirrored headers, answered with plain JSON or a request-scoped SSE stream
 * (progress and requested log messages, then the response). Closing the stream cancels.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ProxyError } from '../../jsonrpc/errors.js';
import { isRequest, serialize } from '../../jsonrpc/message.js';
import { sendError } from '../http/errors.js';
import { tagsInEffect } from '../../core/profiles.js';
import { NOTHING_ASSIGNED } from '../../mcp/features.js';
import { noteExchange } from '../../ops/access-log.js';
import { META } from '../../mcp/eras.js';
import { httpStatusOf } from '../../mcp/http-status.js';
import { PostReply, STREAM_AFTER_MS, takeOver } from '../http/replies.js';
import type { SlowReaderLimits } from '../http/reader-watch.js';
import type { ModernEndpoint, Post } from '../http/server.js';
import type { ModernHandler } from './handler.js';
import { CallAbort } from '../../upstream/call-abort.js';
import { forwardToOwner } from './forward.js';
import { wasForwarded } from '../http/forward.js';
import type { Sealer } from '../../sealing/sealer.js';
import { checkModernHeaders, checkParamHeaders } from './headers.js';

/** Serves the POSTs the era classifier calls modern. */
export class ModernHttp implements ModernEndpoint {
  constructor(
    private readonly handler: ModernHandler,
    private readonly slowReaders: SlowReaderLimits,
    /** Seals the client's address for a replica a request is forwarded to. */
    private readonly sealer: Sealer,
  ) {}

  async post(req: FastifyRequest, reply: FastifyReply, { frames, batch, mode, who }: Post): Promise<unknown> {
    const { handler } = this;
    const msg = frames[0].msg;
    if (batch)
      return sendError(
        reply,
        new ProxyError('BAD_REQUEST', 'Invalid Request: protocol version 2026-07-28 takes one message per POST, not a batch'),
        null,
        'modern',
      );
    if (!isRequest(msg)) {
      if ('method' in msg) return reply.code(202).send();
      return sendError(
        reply,
        new ProxyError('BAD_REQUEST', 'Invalid Request: a modern client sends requests, never responses'),
        null,
        'modern',
      );
    }
    let ctx;
    try {
      // Headers first: a header that disagrees with the body is a mismatch whatever the version.
      const bodyVersion = (msg.params?._meta as Record<string, unknown> | undefined)?.[META.protocolVersion];
      if (typeof bodyVersion === 'string') checkModernHeaders(req.headers, msg, bodyVersion);
      ctx = handler.requestContext(msg, who);
      const { capabilities, assigned } = ctx;
      noteExchange(req, undefined, { tags: () => tagsInEffect(capabilities, assigned ?? NOTHING_ASSIGNED) });
      checkParamHeaders(req.headers, msg, await handler.paramHeaders(msg, ctx));
    } catch (err) {
      return sendError(reply, err, msg.id, 'modern');
    }
    const owner = wasForwarded(req) ? undefined : handler.ownerElsewhere(msg, ctx);
    if (owner) return forwardToOwner(owner, msg.id, req, reply, { replica: handler.replicaId, sealer: this.sealer }, handler.log);
    takeOver(reply);
    let headers: Record<string, string> = {};
    const channel = new PostReply(reply.raw, () => headers, mode, false, STREAM_AFTER_MS, this.slowReaders);
    const cancellation = new CallAbort();
    let answered = false;
    channel.onClose(() => {
      if (!answered) cancellation.abort();
    });
    void handler.handle(msg, ctx, {
      cancellation,
      notify: (n) => {
        if (channel.canStream) channel.send(JSON.stringify(n), false);
      },
      answer: (frame, refusal) => {
        answered = true;
        if (refusal?.retryAfter) headers = { 'retry-after': String(refusal.retryAfter) };
        const error = 'error' in frame.msg ? frame.msg.error : undefined;
        channel.send(serialize(frame), true, refusal?.httpStatus ?? httpStatusOf({ error }));
      },
    });
    return undefined;
  }
}
