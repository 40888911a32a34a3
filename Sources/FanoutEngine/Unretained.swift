/// A reference that neither keeps its object alive nor is checked when read: the one way the engine, and the
/// modules above it, hold an object they do not own on the publish path, where a retain and release per message
/// would show. Public and inlinable, so that the server core and the Redis engine take the same type and a use in
/// another module is the load it is here.
///
/// The rules, in one place, for every use:
/// - Something else owns the object for as long as any `Unretained` to it is read, and each use says which owner
///   it relies on. In the engine: `HistoryStore.ledger` and `MemoryEngine.journal` set their `Unretained` in
///   `didSet`, so the two change together; `HistoryJournal.pending` holds the batch that `filling` names; a run's
///   position names its subject's log, which the history store keeps, and the run closes before anything changes
///   the store (`MemoryEngine.closeRun`). In the server core: a connection is owned by the connection table, or
///   by a publish run's `retired` list from the moment the table lets go of it until the run closes
///   (`Fanout.retired`); the server outlives its connections, its fan-out and its components.
/// - A reader that may cause the owner to let go (a check that can drop what it reads, a departure) takes a
///   strong reference first, with `retained`, and holds it across that call.
/// - Whether a connection is still connected is a separate question (`socket != nil`): a dropped connection is
///   alive until its owner lets go, but nothing more is queued to it.
/// - Everything runs on the loop thread, the only one that lets go of these objects.
/// Breaking the first rule is a use after free, which no check reports.
/// (A `package` type was not inlined across modules in release builds: each use was a call that retained and
/// released its object, on the slow path for a weakly referenced connection, 4 instructions per delivery.)
@frozen public struct Unretained<Object: AnyObject> {
    @usableFromInline let reference: Unmanaged<Object>

    @inlinable @inline(__always)
    public init(_ object: Object) {
        reference = .passUnretained(object)
    }

    /// Runs `body` with the object, without a retain or a release.
    @inlinable @inline(__always)
    public func with<Result>(_ body: (Object) throws -> Result) rethrows -> Result {
        try reference._withUnsafeGuaranteedRef(body)
    }

    /// A strong reference, for a caller about to do something that may make the owner let go.
    @inlinable @inline(__always)
    public var retained: Object { reference.takeUnretainedValue() }

    /// The object's identity, read without touching it.
    @inlinable @inline(__always)
    public var id: ObjectIdentifier { ObjectIdentifier(reference.takeUnretainedValue()) }

    @inlinable @inline(__always)
    public static func === (lhs: Unretained, rhs: Unretained) -> Bool {
        lhs.reference.toOpaque() == rhs.reference.toOpaque()
    }

    @inlinable @inline(__always)
    public static func === (lhs: Unretained, rhs: Object) -> Bool {
        lhs.reference.toOpaque() == Unmanaged.passUnretained(rhs).toOpaque()
    }
}
