// The in-process suites name `.threadPerTest`: the harness steps the server's loop on the test's thread, waiting
// in the loop for events (see `ThreadPerTestTrait`), so each test runs on a thread of its own.
@_exported import FanoutTestSupport
