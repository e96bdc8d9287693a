/**
 * A modern retry (requestState + inputResponses), or a request for a task, that reached a replica
 * other than the one holding the call waiting for input or the task goes there through ../http/forward.ts;
 * here: what it is for, and what the client is told when the owner cannot be reached.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { ProxyError } from '../../jsonrpc/errors.js';
import type { JsonRpcId } from '../../jsonrpc/message.js';
import type { Sealer } from '../../sealing/sealer.js';
import { forwardTo, type Owner as Replica } from '../http/forward.js';

/** Where a request goes: the replica holding its waiting call (a retry) or its task. */
export interface Owner extends Replica {
  holds: 'call' | 'task';
}

export function forwardToOwner(
  owner: Owner,
  id: JsonRpcId,
  req: FastifyRequest,
  reply: FastifyReply,
  self: { replica: string; sealer: Sealer },
  log: Logger,
): Promise<void> {
  return forwardTo(owner, req, reply, {
    ...self,
    id,
    era: 'modern',
    log: log.child({ holds: owner.holds }),
    failed: () =>
      owner.holds === 'task'
        ? new ProxyError(
            'TASK_NOT_FOUND',
            `Failed to retrieve task: the replica holding it ("${owner.replica}") ` +
              'cannot be reached, and the task is lost with it: start the call again',
          )
        : new ProxyError(
            'INVALID_REQUEST_STATE',
            `The replica holding this call ("${owner.replica}") cannot be reached: send the request again without requestState`,
          ),
  });
}
