/**
 * Wiring of replicas: the sealer every replica shares (session tokens, requestState), this
 * replica's name, and the URL other replicas reach it at.
 */
import { hostname } from 'node:os';
import type { Config } from '../config/schema.js';
import { Sealer } from '../sealing/sealer.js';

export interface Replica {
  sealer: Sealer;
  /** This replica's name in session tokens and messages. */
  replicaId: string;
  /** Legacy sessions over an HTTP upstream go on at any replica that shares the secret. */
  sessionsMove: boolean;
  address: ReplicaAddress;
}

export interface ReplicaAddress {
  readonly url: string | undefined;
  /** Told the listening URL once the HTTP front is up. */
  listening(url: string): void;
}

/** The replica the config describes; `movable`: the upstream's sessions may go on at another replica (an HTTP server's). */
export function createReplica(config: Config, movable: boolean): Replica {
  const secret = config.replicas.secret ?? config.modern.stateSecret;
  const sealer = new Sealer(secret ? [secret, ...config.replicas.previousSecrets] : []);
  return {
    sealer,
    replicaId: config.replicas.id ?? `${hostname()}:${process.pid}`,
    sessionsMove: sealer.shared && movable,
    address: replicaAddress(config),
  };
}

/**
 * Where other replicas reach this one: configured; bound to every interface (a container), its
 * host name, as peers on its network resolve it; else the listening URL, once known.
 */
function replicaAddress(config: Config): ReplicaAddress {
  const wildcard = ['0.0.0.0', '::', '[::]'].includes(config.listen.host);
  const address = {
    url:
      config.replicas.url ??
      (wildcard && config.listen.port !== 0 ? `http://${hostname()}:${config.listen.port}${config.listen.path}` : undefined),
    listening(url: string) {
      if (!wildcard) address.url ??= url;
    },
  };
  return address;
}
