// Hearth's stand-in for the web-platform-tests' testdriver.js, the calls the Prompt API's tests make:
// test_driver.bless() puts a button in the page and waits until it is clicked — by the browser's driver, which
// e2e/prompt-api-wpt.spec.ts watches for it — so the page gets a real user activation, then runs `action`.
// set_test_context() names the window that drives an iframe's tests: here the top page is that.
/** @type {any} */ (window).test_driver = {
  /**
   * @param {string} [intent]
   * @param {() => unknown} [action]
   * @param {Window} [context]
   */
  async bless(intent, action, context = window) {
    const doc = context.document;
    const button = doc.createElement('button');
    button.className = 'wpt-bless';
    button.textContent = intent || 'bless';
    // Where the driver clicks (BLESS_AT in the spec), above the page's content.
    button.style.cssText = 'position: fixed; left: 0; top: 0; width: 40px; height: 40px; z-index: 2147483647';
    const clicked = new Promise((resolve) => button.addEventListener('click', resolve, { once: true }));
    doc.body.append(button);
    console.log('wpt:bless'); // for a driver that watches the console (e2e/prompt-api-wpt.spec.ts)
    await clicked;
    button.remove();
    return typeof action === 'function' ? action() : undefined;
  },
  set_test_context() {},
};
