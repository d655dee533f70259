// hearth-llm/openai: OpenAI's HTTP API over a Hearth engine, for clients written for OpenAI. See README.md.
export { openAIFetch } from './openai/fetch.ts';
