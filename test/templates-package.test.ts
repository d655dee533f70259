// The template tests again, on the renderer the npm package ships: its lib/jinja.js (@huggingface/jinja with
// patches/ applied, built in by npm run build:package) in place of the copy in this repository's node_modules, so a
// user of the package renders every template as jinja2 does too.
import { vi } from 'vitest';

vi.mock('@huggingface/jinja', async () => {
  const { stageDir, tarball } = await import('./package-project.ts');
  tarball(); // built, or an error that says how
  const { join } = await import('node:path');
  return import(join(stageDir, 'lib', 'jinja.js'));
});

await import('./quick/templates.test.ts');
