/** The proxy's own version (package.json), as serverInfo and clientInfo name it. */
import { readFileSync } from 'node:fs';

export const PROXY_VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;
