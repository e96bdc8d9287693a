/**
 * Sampling modalities (SEP-2278): `capabilities.sampling.supportedModalities`, validated, with
 * the SEP's default `["text"]`. Exposed to rules as `modality=<name>` tags; the client's
 * capabilities themselves are forwarded upstream unchanged.
 */
import type { FeatureTag } from '../../mcp/features.js';

const MODALITY = /^[a-z][a-z0-9.+-]{0,31}$/;

export function samplingModalities(capabilities: Record<string, unknown>): { modalities: string[]; problem?: string } {
  const sampling = capabilities.sampling as { supportedModalities?: unknown } | undefined;
  const raw = sampling?.supportedModalities;
  if (raw === undefined) return { modalities: ['text'] };
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > 16 || !raw.every((m) => typeof m === 'string' && MODALITY.test(m))) {
    return { modalities: ['text'], problem: 'sampling.supportedModalities must be a non-empty array of modality names; using ["text"]' };
  }
  return { modalities: [...new Set(raw as string[])] };
}

export function modalityTags(modalities: string[]): FeatureTag[] {
  return modalities.map((value) => ({ kind: 'equals', name: 'modality', value }));
}
