// The services beside the router (contract.ts): the KV state store and the model store, which the llama.cpp engine's
// worker keeps. A page whose engine has none (it only talks to a server) answers them as an engine with nothing
// stored would: no cached state, no stored models, and exportPrompt refused with the reason.
import type { EngineCalls, KvStateService, ModelStoreService } from '../contract.ts';
import { InvalidRequestError } from '../errors.ts';
import type { CacheStats } from '../types.ts';
import type { BackendRouter } from './router.ts';

export type Services = KvStateService & ModelStoreService;

const NO_STATS: CacheStats = {
  persistent: false,
  entries: 0,
  bytes: 0,
  budgetBytes: 0,
  conversations: 0,
  systemPrompts: 0,
  memory: { slots: 0, tokens: 0, systemPrompts: 0 },
  hits: { none: 0, memory: 0, indexeddb: 0, 'prompt-state': 0 },
  saves: { count: 0, bytes: 0, ms: 0 },
};

/** The services of an engine that keeps no state and no models here. */
export const NO_SERVICES: Services = {
  cacheStats: async () => structuredClone(NO_STATS),
  cacheClear: async () => {},
  cacheFlush: async () => {},
  cacheExport: async () => {
    throw new InvalidRequestError(
      "exportPrompt needs the wasm backend, which computes the prompt's KV state here: a server " +
        'keeps its state to itself',
      'unsupported_by_backend',
    );
  },
  modelsFetch: async () => {
    throw new InvalidRequestError('this engine has no model store (it only talks to a server)', 'no_store');
  },
  modelsList: async () => [],
  modelsDelete: async () => false,
  modelsUsage: async () => ({ models: 0, used: null, quota: null, persisted: null }),
};

/** The router's calls and the services as the one flat set the page's API and the shared tabs take. */
export function engineCalls(router: BackendRouter, services: Services): EngineCalls {
  return {
    load: (r, c) => router.load(r, c),
    complete: (r, c) => router.complete(r, c),
    embed: (r, c) => router.embed(r, c),
    rank: (r, c) => router.rank(r, c),
    countTokens: (r, c) => router.countTokens(r, c),
    info: () => router.info(),
    unload: () => router.unload(),
    cacheStats: () => services.cacheStats(),
    cacheClear: (o) => services.cacheClear(o),
    cacheFlush: () => services.cacheFlush(),
    cacheExport: (r, c) => services.cacheExport(r, c),
    modelsFetch: (r, c) => services.modelsFetch(r, c),
    modelsList: () => services.modelsList(),
    modelsDelete: (r) => services.modelsDelete(r),
    modelsUsage: () => services.modelsUsage(),
  };
}
