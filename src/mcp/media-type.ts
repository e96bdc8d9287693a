/**
 * Media types of Streamable HTTP, read from Content-Type and Accept headers: the type itself,
 * without parameters (`; charset=utf-8`), lower-cased, so that `application/json-seq` or a
 * parameter never passes for `application/json`.
 */

export const JSON_TYPE = 'application/json';
export const SSE_TYPE = 'text/event-stream';

/** A Content-Type header's media type (`type/subtype`, lower-cased), or '' when there is none. */
export function mediaTypeOf(header: string | string[] | null | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return '';
  const semicolon = value.indexOf(';');
  return (semicolon === -1 ? value : value.slice(0, semicolon)).trim().toLowerCase();
}

export const ANY_TYPE = '*/*';

/** The media ranges an Accept header lists (`type/subtype` or `*\/*`, lower-cased); quality values are not weighed. */
export function acceptedTypes(header: string | string[] | undefined): string[] {
  const value = Array.isArray(header) ? header.join(',') : (header ?? '');
  return value
    .split(',')
    .map(mediaTypeOf)
    .filter((type) => type !== '');
}
