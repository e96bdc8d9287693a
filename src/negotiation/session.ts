/**
 * The negotiated context of one session and what it does to results. Built once at initialize
 * (legacy era) from the client's extension settings and capabilities; `shape` then returns a
 * replacement result, or undefined to relay the upstream's bytes untouched. A client that did
 * not declare the extension gets nothing changed, not even the initialize result.
 */
import type { Logger } from 'pino';
import { runPipeline } from '../pipeline/run.js';
import type { CompiledRule } from '../pipeline/rules.js';
import type { McpResult } from '../pipeline/types.js';
import { FeatureSet, parseFeatures } from './features.js';
import { modalityTags, samplingModalities } from './modalities.js';

export const CONTENT_NEGOTIATION = 'io.modelcontextprotocol/content-negotiation';
const MAX_SETTINGS_BYTES = 4096;

export interface NegotiationSetup {
  rules: CompiledRule[];
  log: Logger;
}

export class Negotiation {
  features: FeatureSet = FeatureSet.EMPTY;
  modalities: string[] = ['text'];
  /** The client declared the extension (with valid settings). */
  declared = false;
  /** The upstream speaks the extension itself: pass through, never transform twice. */
  upstreamNative = false;
  private readonly outputSchemas = new Map<string, Record<string, unknown>>();

  constructor(private readonly setup: NegotiationSetup) {}

  /** Reads the client's initialize params (untrusted: every field is checked). */
  onInitialize(params: Record<string, unknown> | undefined): void {
    const capabilities = isObject(params?.capabilities) ? params.capabilities : {};
    const settings = isObject(capabilities.extensions) ? capabilities.extensions[CONTENT_NEGOTIATION] : undefined;
    const { modalities, problem } = samplingModalities(capabilities);
    this.modalities = modalities;
    if (problem) this.setup.log.warn({ problem }, 'client sampling modalities ignored');
    if (settings === undefined) return;
    if (!isObject(settings) || JSON.stringify(settings).length > MAX_SETTINGS_BYTES) {
      this.setup.log.warn('content-negotiation settings ignored: not an object, or larger than 4 KiB');
      return;
    }
    const parsed = parseFeatures(settings.features, capabilities, modalityTags(modalities));
    this.declared = true;
    this.features = parsed.features;
    for (const { tag, reason } of parsed.ignored) this.setup.log.warn({ tag, reason }, 'invalid feature tag ignored');
    this.setup.log.debug(
      {
        version: settings.version,
        requested: settings.features,
        accepted: parsed.accepted,
        ignored: parsed.ignored.map((i) => i.tag),
        features: this.features.toTags(),
        rules: this.setup.rules.filter((r) => r.features.every((f) => this.features.satisfies(f))).map((r) => r.label),
      },
      'content negotiation',
    );
  }

  /** A replacement for `result`, or undefined to keep the upstream's bytes. */
  shape(method: string, name: string | undefined, result: McpResult): McpResult | undefined | Promise<McpResult | undefined> {
    if (method === 'tools/list') this.rememberOutputSchemas(result);
    if (!this.declared) return undefined;
    if (method === 'initialize') return this.advertise(result);
    if (this.upstreamNative || this.features.isEmpty) return undefined;
    const ctx = { method, name, features: this.features, era: 'legacy' as const, outputSchema: name ? this.outputSchemas.get(name) : undefined, log: this.setup.log };
    return runPipeline(this.setup.rules, result, ctx).then((o) => {
      if (o.applied.length) this.setup.log.debug({ method, name, applied: o.applied }, 'result shaped');
      return o.result;
    });
  }

  private advertise(result: McpResult): McpResult | undefined {
    const capabilities = isObject(result.capabilities) ? result.capabilities : {};
    const extensions = isObject(capabilities.extensions) ? capabilities.extensions : {};
    if (extensions[CONTENT_NEGOTIATION] !== undefined) {
      this.upstreamNative = true;
      this.setup.log.info('upstream supports content negotiation itself; passing through');
      return undefined;
    }
    const format = [...(this.features.values.get('format') ?? [])][0];
    const note = `Content negotiation: ${format ? `format=${format}` : 'default format'} in effect for this session (${this.features.toTags().join(', ')}).`;
    const instructions = typeof result.instructions === 'string' && result.instructions ? `${result.instructions}\n\n${note}` : note;
    return { ...result, capabilities: { ...capabilities, extensions: { ...extensions, [CONTENT_NEGOTIATION]: {} } }, instructions };
  }

  private rememberOutputSchemas(result: McpResult): void {
    if (!Array.isArray(result.tools)) return;
    for (const tool of result.tools as Array<Record<string, unknown>>) {
      if (typeof tool?.name === 'string' && isObject(tool.outputSchema)) this.outputSchemas.set(tool.name, tool.outputSchema);
    }
  }
}

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
