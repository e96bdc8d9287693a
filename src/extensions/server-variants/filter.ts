/**
 * Server variants as a filter: the variants ranked for a session's (or request's) hints, each
 * request checked against its variant's namespace (and the variant key stripped, or mapped for
 * an upstream that implements variants itself), results shown as the variant's view, errors
 * naming the active variant, and list changes announced once per offered variant.
 */
import { isObject } from '../../jsonrpc/message.js';
import { extensionsOf, type Filter } from '../contract.js';
import { VariantScope, type VariantCatalog } from './scope.js';
import { SERVER_VARIANTS } from './variants.js';

export interface VariantState {
  scope: VariantScope;
  /** The `server-variants` payload to advertise, when the client declared the extension. */
  offer?: Record<string, unknown>;
  /** The upstream offers variants itself and the proxy has none configured: pass the key through. */
  passThrough: boolean;
}

export function serverVariantsFilter(catalog: VariantCatalog): Filter<VariantState> {
  return {
    name: 'server-variants',
    negotiate(capabilities, _era, log, assigned) {
      const scope = new VariantScope(catalog, log, assigned.variant);
      return { scope, offer: scope.onInitialize(capabilities), passThrough: false };
    },
    learnUpstream(result, state) {
      const extensions = extensionsOf(result);
      const upstreamOffers = extensions[SERVER_VARIANTS] !== undefined;
      state.passThrough = upstreamOffers && !catalog.enabled;
      state.scope.upstreamNative = upstreamOffers;
      if (upstreamOffers && catalog.enabled) {
        state.offer =
          state.scope.mergeUpstream((extensions[SERVER_VARIANTS] as { availableVariants?: unknown }).availableVariants) ?? state.offer;
      }
    },
    onInitializeResult(result, state) {
      if (!state.offer || state.passThrough) return undefined;
      const capabilities = isObject(result.capabilities) ? result.capabilities : {};
      return { ...result, capabilities: { ...capabilities, extensions: { ...extensionsOf(result), [SERVER_VARIANTS]: state.offer } } };
    },
    discover(state) {
      const offer = state.offer ?? state.scope.offer();
      return offer && !state.passThrough ? { [SERVER_VARIANTS]: offer } : undefined;
    },
    onRequest(req, ctx) {
      if (ctx.state.passThrough) return undefined;
      return ctx.state.scope.check(req);
    },
    wantsResult: (ctx) => ctx.variant !== undefined,
    onResult(result, ctx) {
      return ctx.variant === undefined ? undefined : ctx.state.scope.view(ctx.method, result, ctx.variant);
    },
    onError(error, ctx) {
      // A request made in a variant names it (`data.activeVariant`, SEP-2053), unless the upstream speaks for itself.
      if (ctx.variant === undefined || ctx.state.scope.upstreamNative) return undefined;
      const data = error.data ?? {};
      if (!isObject(data) || 'activeVariant' in data) return undefined;
      return { ...error, data: { ...data, activeVariant: ctx.variant } };
    },
    onNotification(n, state) {
      return state.scope.listChanged(n);
    },
  };
}
