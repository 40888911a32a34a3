import Testing

/// The suites that build a server in the test process, run one test at a time. Each test steps its server's loop
/// on the thread it runs on, and the test runner has about as many threads as cores: two floods stepped at once on
/// a 2-core machine held every other suite's tests back until their time limits passed.
@Suite(.serialized, .threadPerTest) enum InProcess {}
