// Hearth's stand-in for the web-platform-tests' testdriver-vendor.js: testdriver.js needs no vendor hooks here.
