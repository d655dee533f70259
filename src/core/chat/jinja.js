// The Jinja renderer: @huggingface/jinja built from its TypeScript source (node_modules/@huggingface/jinja/src/), the
// files patches/ edits to render as Python's jinja2 does, never its published dist/. Every consumer takes it from
// here: Vite (the site, the widget, the worker, the package's library build), Vitest and tsx.
//
// JavaScript with its types beside it (jinja.d.ts): the package's source does not pass this repository's stricter
// compiler flags (noUncheckedIndexedAccess), so tsc reads the package's published declarations instead, which
// describe the same API (the patch changes none); `npm run typecheck` checks the patched source under the package's
// own flags. tsconfig.json leaves this file out, else tsc would follow its import into the source.
export { Template } from '../../../node_modules/@huggingface/jinja/src/index.ts';
