/// A position in the subject index's pattern list, for work spread over several loop passes: a sweep, or a
/// `CHANNELS` listing that answers once its scan is done.
///
/// Promise: a scan that runs to the end visits every pattern stored for the whole scan exactly once; patterns
/// added or removed meanwhile may or may not be visited. The index keeps the promise as patterns come and go,
/// at O(1) per live cursor per removal, and forgets a cursor once its scan ends or nothing holds it.
public final class PatternCursor {
    /// Every pattern below this position in the list has been visited.
    var position = 0

    init() {}
}

/// Holds a cursor weakly: a listing abandoned with its connection must not keep costing removals.
struct WeakCursor {
    weak var cursor: PatternCursor?
}
