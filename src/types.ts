// Public types: the engine interface (HearthEngine, built once by api/engine-api.ts over the calls a backend answers)
// and the OpenAI-shaped request and response objects, one file per endpoint in types/.
export type * from './types/chat.ts';
export type * from './types/embeddings.ts';
export type * from './types/engine.ts';
export type * from './types/models.ts';
export type * from './types/options.ts';
