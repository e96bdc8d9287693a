import { describe, expect, it } from 'vitest';
import { ANY_TYPE, JSON_TYPE, SSE_TYPE, acceptedTypes, mediaTypeOf } from './media-type.js';

describe('mediaTypeOf', () => {
  it('drops parameters and case', () => {
    expect(mediaTypeOf('Application/JSON; charset=utf-8')).toBe(JSON_TYPE);
    expect(mediaTypeOf(' text/event-stream ')).toBe(SSE_TYPE);
    expect(mediaTypeOf(['text/event-stream;charset=utf-8'])).toBe(SSE_TYPE);
  });

  it('is empty for no header, and never a prefix match', () => {
    expect(mediaTypeOf(undefined)).toBe('');
    expect(mediaTypeOf(null)).toBe('');
    expect(mediaTypeOf('application/json-seq')).toBe('application/json-seq');
  });
});

describe('acceptedTypes', () => {
  it('lists the ranges without parameters or quality values', () => {
    expect(acceptedTypes('application/json, text/event-stream')).toEqual([JSON_TYPE, SSE_TYPE]);
    expect(acceptedTypes('application/json;q=0.9,Text/Event-Stream;q=0.5')).toEqual([JSON_TYPE, SSE_TYPE]);
    expect(acceptedTypes(['application/json', 'text/event-stream'])).toEqual([JSON_TYPE, SSE_TYPE]);
    expect(acceptedTypes('text/html, */*;q=0.1')).toEqual(['text/html', ANY_TYPE]);
  });

  it('is empty for no header, and names no type by a prefix', () => {
    expect(acceptedTypes(undefined)).toEqual([]);
    expect(acceptedTypes('')).toEqual([]);
    expect(acceptedTypes('application/json-seq')).not.toContain(JSON_TYPE);
  });
});
