/** Tokens one llama_decode takes at most (n_batch = n_ubatch): the scheduler fills batches up to it, and an embedding
 * input must fit in one. */
export const N_BATCH = 512;
