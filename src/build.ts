// Which build of Hearth this code is (scripts/build-id.mjs writes it in at build time; 'dev' when run from source).
declare const __HEARTH_BUILD__: string | undefined;

export const BUILD_ID: string = typeof __HEARTH_BUILD__ === 'string' ? __HEARTH_BUILD__ : 'dev';
