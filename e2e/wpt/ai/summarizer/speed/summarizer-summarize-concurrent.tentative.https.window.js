// META: title=Summarizer Speed Preference Summarize Concurrent
// META: script=/resources/testdriver.js
// META: script=/resources/testdriver-vendor.js
// META: script=../../resources/util.js
// META: timeout=long

'use strict';

const kSpeedOptions = {preference: 'speed', outputLanguage: 'en'};

promise_test(async () => {
  const summarizer = await createSummarizer(kSpeedOptions);
  await Promise.all(
      [summarizer.summarize(kTestPrompt), summarizer.summarize(kTestPrompt)]);
}, 'Multiple Summarizer.summarize() calls with speed preference and identical inputs are resolved successfully');

promise_test(async () => {
  const summarizer = await createSummarizer(kSpeedOptions);
  await Promise.all(
      [summarizer.summarize(kTestPrompt), summarizer.summarize(kTestPrompt2)]);
}, 'Multiple Summarizer.summarize() calls with speed preference and divergent inputs are resolved successfully');
