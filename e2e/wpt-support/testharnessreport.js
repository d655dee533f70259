// Hearth's stand-in for the web-platform-tests' testharnessreport.js: the results go to window.wptResults and the
// console, where e2e/prompt-api-wpt.spec.ts reads them, instead of a report in the page. The file's timeouts are scaled by the
// page's ?timeout= (a small model in wasm is slower than a browser's built-in one, and the first create() loads it).
// (A block: a classic script's consts would be globals the tests could collide with.)
{
  /** testharness.js's globals, as this file uses them. @type {any} */
  const harness = globalThis;
  harness.setup({
    output: false,
    timeout_multiplier: Number(new URLSearchParams(location.search).get('timeout') || '1'),
  });
  /**
   * @param {Array<{ name: string, status: number, message?: string }>} tests
   * @param {{ status: number, message?: string }} status
   */
  const report = (tests, status) => {
    harness.wptResults = {
      status: status.status,
      message: status.message ?? null,
      tests: tests.map((t) => ({ name: t.name, status: t.status, message: t.message ?? null })),
    };
    console.log(`wpt:results ${JSON.stringify(harness.wptResults)}`);
  };
  harness.add_completion_callback(report);
}
