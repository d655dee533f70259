// META: title=Writer Write Streaming
// META: script=/common/gc.js
// META: script=/resources/testdriver.js
// META: script=../resources/util.js
// META: timeout=long

'use strict';

promise_test(async () => {
  const writer = await createWriter();
  const streamingResponse = writer.writeStreaming(kTestPrompt);
  assert_true(streamingResponse instanceof ReadableStream);
  const result = (await Array.fromAsync(streamingResponse)).join('');
  assert_greater_than(result.length, 0, 'The result should not be empty.');
}, 'Simple Writer.writeStreaming() call');

promise_test(async (t) => {
  const writer = await createWriter();
  const stream = writer.writeStreaming(kTestPrompt);

  writer.destroy();

  await promise_rejects_dom(
    t, 'AbortError', stream.pipeTo(new WritableStream()));
}, 'Writer.writeStreaming() fails after destroyed');

promise_test(async t => {
  const writer = await createWriter();
  const streamingResponse = writer.writeStreaming('');
  assert_true(streamingResponse instanceof ReadableStream);
  const { result, done } = await streamingResponse.getReader().read();
  assert_true(done);
}, 'Writer.writeStreaming() returns a ReadableStream without any chunk on an empty input');

promise_test(async () => {
  const writer = await createWriter();
  const streamingResponse = writer.writeStreaming(kTestPrompt);
  garbageCollect();
  assert_true(streamingResponse instanceof ReadableStream);
  let result = '';
  for await (const value of streamingResponse) {
    result += value;
    garbageCollect();
  }
assert_greater_than(result.length, 0, 'The result should not be empty.');
}, 'Write Streaming API must continue even after GC has been performed.');
