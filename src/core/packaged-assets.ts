// In this repository the engine's files are served at /hearth/ (public/hearth), so there is nothing here. The npm
// package replaces this module with packaged-assets.js (written by scripts/build-package.mjs), which names each file
// by a literal `new URL('../widget/<file>', import.meta.url)`: the form bundlers follow to copy a file and rewrite
// its address, and that resolves beside the module in Node and on a plain static host. Keyed by file name
// (core/assets.ts: ASSET_FILES).
const packaged: Readonly<Record<string, string>> | null = null;
export default packaged;
