// Where the engine's static files are: the worker script, the wasm builds with their glue, wllama's wasm. Each by its
// own URL, because a bundler that copies them (Vite, webpack 5, Parcel) gives every file a hashed name of its own:
// the worker is told every address instead of deriving them from one folder.
import packaged from './packaged-assets.ts';

// The relaxed-SIMD builds share their plain twin's glue (wasm/build.mjs checks they may).
export const ASSET_FILES = [
  'engine.worker.js',
  'hearth-st.js',
  'hearth-st.wasm',
  'hearth-st-relaxed.wasm',
  'hearth-mt.js',
  'hearth-mt.wasm',
  'hearth-mt-relaxed.wasm',
  'hearth-webgpu.js',
  'hearth-webgpu.wasm',
  'wllama.wasm',
] as const;
export type AssetFile = (typeof ASSET_FILES)[number];
/** The memory64 build, for a model past wasm32's heap (backends/llamacpp/worker/memory64.ts): built only when asked
 * (npm run build:wasm -- --memory64), so a folder may lack it, and the npm package does not carry it. */
export const MEMORY64_FILES = ['hearth-mt64.js', 'hearth-mt64.wasm'] as const;
/** Absolute URL of each file. */
export type Assets = Record<AssetFile, string> & Partial<Record<(typeof MEMORY64_FILES)[number], string>>;

/** Every file in one folder (an absolute URL, or one relative to `base`): EngineOptions.assetsUrl, the widget's folder.
 */
export function assetsIn(folder: string, base?: string): Assets {
  const dir = new URL(folder, base).href.replace(/\/?$/, '/');
  return Object.fromEntries([...ASSET_FILES, ...MEMORY64_FILES].map((f) => [f, new URL(f, dir).href])) as Assets;
}

/** The default: beside the npm package's own modules (packaged-assets), or '/hearth/' on this repository's pages. */
export function defaultAssets(base: string): Assets {
  return packaged ? ({ ...packaged } as Assets) : assetsIn('/hearth/', base);
}
