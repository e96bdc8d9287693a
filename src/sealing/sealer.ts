/**
 * Sealed tokens: small JSON payloads encrypted and authenticated with AES-256-GCM, so that any
 * replica holding the secret can read what another replica wrote and nobody else can read or
 * alter it. Each token names its key (a short id derived from the secret), so secrets rotate:
 * the first secret seals, every listed secret opens. The purpose is bound as associated data,
 * so a session token is never accepted as a requestState or the other way round.
 *
 * Token: `<keyId>.<base64url(iv ‖ ciphertext ‖ tag)>`.
 */
import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomBytes, randomFillSync, type KeyObject } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Tokens travel in headers: anything longer was not written by a sealer. */
const MAX_TOKEN_CHARS = 8192;
/** A 2026-07-28 server's own requestState rides in a request's body, not a header: it may be larger. */
const MAX_TOKEN_CHARS_BY_PURPOSE: Partial<Record<SealPurpose, number>> = { upstreamState: 1024 * 1024 };

function maxTokenChars(purpose: SealPurpose): number {
  return MAX_TOKEN_CHARS_BY_PURPOSE[purpose] ?? MAX_TOKEN_CHARS;
}

/** A payload too large to seal for its purpose: its token would be refused where it is opened. */
export class TokenTooLarge extends Error {
  constructor(
    readonly purpose: SealPurpose,
    /** The payload's size, and the most that fits, in bytes of JSON. */
    readonly bytes: number,
    readonly maxBytes: number,
  ) {
    super(`A ${purpose} of ${bytes} bytes is too large to seal (at most ${maxBytes})`);
  }
}

export type SealPurpose = 'session' | 'requestState' | 'task' | 'upstreamState' | 'upstreamTask' | 'clientAddress';

interface SealKey {
  id: string;
  key: KeyObject;
}

/** IVs are drawn from a pool of random bytes: one call to the RNG per 512 tokens, not one each. */
const IV_POOL_SIZE = IV_BYTES * 512;
let ivPool = Buffer.alloc(0);
let ivOffset = 0;

function nextIv(): Buffer {
  if (ivOffset + IV_BYTES > ivPool.length) {
    ivPool = randomFillSync(Buffer.allocUnsafe(IV_POOL_SIZE));
    ivOffset = 0;
  }
  ivOffset += IV_BYTES;
  return ivPool.subarray(ivOffset - IV_BYTES, ivOffset);
}

const AAD: Record<SealPurpose, Buffer> = {
  session: Buffer.from('session'),
  requestState: Buffer.from('requestState'),
  task: Buffer.from('task'),
  upstreamState: Buffer.from('upstreamState'),
  upstreamTask: Buffer.from('upstreamTask'),
  clientAddress: Buffer.from('clientAddress'),
};

export class Sealer {
  private readonly keys: SealKey[];
  /** Whether other processes can open these tokens (a configured secret, not a random key). */
  readonly shared: boolean;

  /** `secrets[0]` seals; all open. With none, a random key: tokens only this process can open. */
  constructor(secrets: string[]) {
    this.shared = secrets.length > 0;
    const material = secrets.length > 0 ? secrets.map((s) => Buffer.from(s, 'utf8')) : [randomBytes(32)];
    this.keys = material.map((secret) => ({
      id: Buffer.from(hkdfSync('sha256', secret, 'mcp-negotiate-proxy', 'key-id', 6)).toString('base64url'),
      key: createSecretKey(Buffer.from(hkdfSync('sha256', secret, 'mcp-negotiate-proxy', 'aes-256-gcm', 32))),
    }));
  }

  /** A token for `payload`; throws TokenTooLarge when it would be longer than `open` takes (checked before encrypting). */
  seal(purpose: SealPurpose, payload: object): string {
    const { id, key } = this.keys[0];
    const plain = Buffer.from(JSON.stringify(payload), 'utf8');
    const max = maxTokenChars(purpose);
    const chars = id.length + 1 + Math.ceil(((IV_BYTES + plain.length + TAG_BYTES) * 4) / 3);
    if (chars > max) throw new TokenTooLarge(purpose, plain.length, Math.floor(((max - id.length - 1) * 3) / 4) - IV_BYTES - TAG_BYTES);
    const iv = nextIv();
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(AAD[purpose]);
    const body = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return `${id}.${body.toString('base64url')}`;
  }

  /** The payload, or undefined for anything this sealer did not write for `purpose` (forged, altered, unknown key). */
  open<T extends object>(purpose: SealPurpose, token: string): T | undefined {
    if (typeof token !== 'string' || token.length > maxTokenChars(purpose)) return undefined;
    const dot = token.indexOf('.');
    const entry = dot > 0 ? this.keys.find((k) => k.id === token.slice(0, dot)) : undefined;
    if (!entry) return undefined;
    const text = token.slice(dot + 1);
    const body = Buffer.from(text, 'base64url');
    // Node's decoder skips characters outside the alphabet: only the canonical spelling of a token is that token.
    if (body.length < IV_BYTES + TAG_BYTES + 2 || body.toString('base64url') !== text) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', entry.key, body.subarray(0, IV_BYTES));
      decipher.setAAD(AAD[purpose]);
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(body.subarray(IV_BYTES, body.length - TAG_BYTES)), decipher.final()]);
      const payload: unknown = JSON.parse(plain.toString('utf8'));
      return typeof payload === 'object' && payload !== null ? (payload as T) : undefined;
    } catch {
      return undefined;
    }
  }
}
