// The Hugging Face Hub as the app's catalogue tests meet it (the real one is on the internet, which these machines
// cannot reach): a test/model-server.ts on a fixed port, started by the spec, which the test servers (vite.config.ts,
// HEARTH_TEST_HUB) name as the catalogue's Hub. Its catalogue adds one entry, the generated test model, to the app's.
export const TEST_HUB_PORT = 4180;
export const TEST_HUB = `http://localhost:${TEST_HUB_PORT}`;

/** The catalogue entry of the test model (it answers "Hello, world!"): served by the test Hub like any other. */
export const TEST_ENTRY = {
  id: 'test-qwen2-hello',
  name: 'Test model (generated qwen2)',
  params: 'tiny',
  hf: { repo: 'hearth-test/qwen2-hello-GGUF', file: 'qwen2-hello.gguf' },
  quant: 'F32',
  context: 4096,
  shape: { layers: 2, kvHeads: 2, headDim: 16, vocab: 151936, embd: 64 },
  licence: 'test',
  goodAt: 'Answers "Hello, world!" to anything: for the tests.',
};

/** What /test-models/catalogue.json answers on the test servers. */
export const testCatalogue = () => JSON.stringify({ endpoint: TEST_HUB, models: [TEST_ENTRY] });
