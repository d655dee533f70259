// The system packages Hearth's build and tests need: mmdebstrap and bubblewrap to make and enter the build root that
// holds the wasm toolchain (scripts/toolchain.mjs: Debian trixie's emscripten), Chromium, Firefox and WebKitGTK (its
// WebDriver, under a virtual X display) for the end-to-end tests, Python's jinja2 as the reference the chat-template
// test compares against, CMake, make and g++ to build llama.cpp's llama-server natively (scripts/build-server.mjs).
// On Debian or Ubuntu as root, the missing ones are installed with apt; anywhere else this stops before any work with
// the one command to run.
//   node scripts/system-packages.mjs build   mmdebstrap, bubblewrap
//   node scripts/system-packages.mjs test    those, chromium, firefox-esr, webkit2gtk-driver, xvfb, python3-jinja2,
//                                            and the server's and webgpu's
//   node scripts/system-packages.mjs webgpu  mesa-vulkan-drivers, libvulkan1 (npm run test:webgpu)
//   node scripts/system-packages.mjs server  cmake, make, g++
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** What each package provides, and how to tell it is there (an executable; tests may point elsewhere). */
const PACKAGES = {
  mmdebstrap: {
    found: () => onPath('mmdebstrap'),
    what: "mmdebstrap (makes the build root with Debian trixie's emscripten)",
  },
  bubblewrap: { found: () => onPath('bwrap'), what: 'bubblewrap (bwrap, runs the build inside that root)' },
  chromium: {
    found: () => existsSync(process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'),
    what: 'Chromium at /usr/bin/chromium (or set CHROMIUM_PATH)',
  },
  'firefox-esr': {
    found: () => existsSync(process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr'),
    what: 'Firefox ESR at /usr/bin/firefox-esr (or set FIREFOX_PATH)',
  },
  'webkit2gtk-driver': {
    found: () => onPath('WebKitWebDriver'),
    what: "WebKitGTK's WebDriver (WebKitWebDriver) and MiniBrowser",
  },
  xvfb: {
    found: () => onPath('Xvfb') || !!process.env.DISPLAY,
    what: 'Xvfb, a virtual X display for WebKitGTK (or a DISPLAY)',
  },
  // Bookworm's lavapipe is too old for Dawn (the GPU engine's Node tests take bookworm-backports' through
  // scripts/debian-files.mjs), but installing it brings the libraries that one needs (LLVM 15, xcb, wayland).
  'mesa-vulkan-drivers': {
    found: () => existsSync('/usr/share/vulkan/icd.d/lvp_icd.x86_64.json'),
    what: "Mesa's Vulkan drivers (lavapipe's libraries, for the GPU engine's tests in Node)",
  },
  libvulkan1: {
    found: () => existsSync('/usr/lib/x86_64-linux-gnu/libvulkan.so.1'),
    what: 'the Vulkan loader (for Dawn in Node)',
  },
  cmake: { found: () => onPath('cmake'), what: 'CMake (builds llama-server natively)' },
  make: { found: () => onPath('make'), what: 'make' },
  'g++': { found: () => onPath('g++'), what: 'g++ (builds llama-server natively)' },
  'python3-jinja2': {
    found: () => spawnSync('python3', ['-c', 'import jinja2'], { stdio: 'ignore' }).status === 0,
    what: 'Python 3 with jinja2',
  },
};

/** @typedef {keyof typeof PACKAGES} Package */
/** @type {Package[]} */
const BUILD = ['mmdebstrap', 'bubblewrap'];
/** @type {Package[]} */
const SERVER = ['cmake', 'make', 'g++'];
/** @type {Package[]} */
const WEBGPU = ['mesa-vulkan-drivers', 'libvulkan1'];
/** @type {Record<'build' | 'test' | 'webgpu' | 'server', Package[]>} */
const NEEDS = {
  build: BUILD,
  // Everything npm test needs, in one apt-get before its builds run side by side (two apt-gets at once would fight
  // over dpkg's lock).
  test: [...BUILD, 'chromium', 'firefox-esr', 'webkit2gtk-driver', 'xvfb', 'python3-jinja2', ...SERVER, ...WEBGPU],
  webgpu: WEBGPU,
  server: SERVER,
};

/** @param {string} cmd */
function onPath(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/**
 * Installs (or names) the packages `purpose` needs that are missing. Exits the process when it cannot.
 * @param {keyof typeof NEEDS} purpose
 */
export function ensurePackages(purpose) {
  const missing = NEEDS[purpose].filter((name) => !PACKAGES[name].found());
  if (!missing.length) return;
  const apt = onPath('apt-get');
  if (apt && process.getuid?.() === 0) {
    console.log(`[system-packages] installing ${missing.join(', ')} (apt-get install)…`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    execFileSync('apt-get', ['update', '-q'], { stdio: 'inherit', env });
    execFileSync('apt-get', ['install', '-y', '-q', ...missing], { stdio: 'inherit', env });
    const still = missing.filter((name) => !PACKAGES[name].found());
    if (!still.length) return;
    console.error(`[system-packages] still missing after apt-get: ${still.join(', ')}`);
    process.exit(1);
  }
  console.error(`[system-packages] missing: ${missing.map((name) => PACKAGES[name].what).join('; ')}.`);
  console.error(
    apt
      ? `Run:  sudo apt-get install -y ${missing.join(' ')}`
      : "Install them with your system's package manager, then run this again.",
  );
  process.exit(1);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const purpose = process.argv[2];
  if (purpose === undefined || !(purpose in NEEDS)) {
    console.error(`usage: node scripts/system-packages.mjs <${Object.keys(NEEDS).join('|')}>`);
    process.exit(2);
  }
  ensurePackages(/** @type {keyof typeof NEEDS} */ (purpose));
}
