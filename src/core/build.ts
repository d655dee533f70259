// Which build of Hearth this code is (scripts/build-id.mjs writes it in at build time; 'dev' when run from source).
declare const __HEARTH_BUILD__: string | undefined;

export const BUILD_ID: string = typeof __HEARTH_BUILD__ === 'string' ? __HEARTH_BUILD__ : 'dev';

// Hearth's release (package.json's version), written in the same way; 'dev' when run from source outside the tests.
declare const __HEARTH_VERSION__: string | undefined;
export const VERSION: string = typeof __HEARTH_VERSION__ === 'string' ? __HEARTH_VERSION__ : 'dev';
