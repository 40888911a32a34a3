// Every suite here names `.threadPerTest`: its tests block on sockets, processes and daemons (see
// `ThreadPerTestTrait`), so each runs on a thread of its own and leaves the concurrency pool to the rest.
@_exported import FanoutTestSupport
