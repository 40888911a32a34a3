/// A reference that neither keeps its object alive nor is checked when read: the one way the server core holds
/// an object it does not own on a path where a retain and release per read would show.
///
/// The rules, in one place, for every use:
/// - Something else owns the object for as long as any `Unretained` to it is read. For a connection that is
///   the connection table, or a publish run's `retired` list from the moment the table lets go of it until the
///   run closes (`Fanout.retired`). For the server it is the process: the server outlives its connections,
///   its fan-out and its components.
/// - A reader that may cause the owner to let go (a backlog check that can drop a slow consumer, a departure)
///   takes a strong reference first, with `retained`, and holds it across that call.
/// - Whether a connection is still connected is a separate question (`socket != nil`): a dropped connection is
///   alive until its owner lets go, but nothing more is queued to it.
/// Breaking the first rule is a use after free, which no check reports: keep each use beside the owner it relies
/// on, and say which in a comment.
struct Unretained<Object: AnyObject> {
    private let reference: Unmanaged<Object>

    @inline(__always)
    init(_ object: Object) {
        reference = .passUnretained(object)
    }

    /// Runs `body` with the object, without a retain or a release.
    @inline(__always)
    func with<Result>(_ body: (Object) throws -> Result) rethrows -> Result {
        try reference._withUnsafeGuaranteedRef(body)
    }

    /// A strong reference, for a caller about to do something that may make the owner let go.
    @inline(__always)
    var retained: Object { reference.takeUnretainedValue() }

    /// The object's identity, read without touching it.
    @inline(__always)
    var id: ObjectIdentifier { ObjectIdentifier(reference.takeUnretainedValue()) }

    @inline(__always)
    static func === (lhs: Unretained, rhs: Unretained) -> Bool {
        lhs.reference.toOpaque() == rhs.reference.toOpaque()
    }

    @inline(__always)
    static func === (lhs: Unretained, rhs: Object) -> Bool {
        lhs.reference.toOpaque() == Unmanaged.passUnretained(rhs).toOpaque()
    }
}
