// hearth-llm/prompt-api: the Prompt API's LanguageModel over a Hearth engine, for code written for the browser's
// built-in model (docs/prompt-api.md).
export { type Availability, type CreateOptions, languageModelClass, type PromptApiOptions } from './sessions.ts';
export { installPromptApi, type PolyfillConfig } from './polyfill.ts';
