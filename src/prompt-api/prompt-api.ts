// hearth-llm/prompt-api: the Prompt API's LanguageModel and the Writing Assistance APIs (Summarizer, Writer, Rewriter)
// over a Hearth engine, for code written for the browser's built-in model (docs/prompt-api.md).
export {
  type Availability,
  type CreateOptions,
  type LanguageModelClass,
  type LanguageModelSession,
  languageModelClass,
  type PromptApiOptions,
  type PromptOptions,
  type SamplingMode,
} from './sessions.ts';
export { installPromptApi, type PolyfillConfig } from './polyfill.ts';
export { ModelHost } from './model-host.ts';
export {
  type Rewriter,
  type Summarizer,
  type WritingCallOptions,
  type WritingCreateOptions,
  type WritingTask,
  type WritingTaskClass,
  type Writer,
  writingAssistanceClasses,
} from './writing-assistance.ts';
