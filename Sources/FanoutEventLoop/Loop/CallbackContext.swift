/// The object a C callback's context pointer names: the one way this module (and FanoutRedis, for hiredis's
/// `data`) hands an object to C and gets it back in the callback, with no retain either way.
///
/// The rules, in one place, for every use:
/// - Who keeps it alive: the object's own owner (a connection its socket, the server its listeners, timers
///   and signal watchers, the loop the sockets that linger), never the pointer. C holds no reference.
/// - When the callback can no longer fire: the object owns the C handle that holds the pointer (event,
///   bufferevent, evconnlistener, hiredis context) and frees it, or clears the pointer, in its `deinit` or
///   before. So while C can call back, the object is alive.
/// - Callbacks run on the loop thread, the only thread that lets go of these objects.
/// - A callback that may make the owner let go (a socket's owner dropping it from a read) holds the object
///   with `withExtendedLifetime` until the call returns: `object` is a strong reference from then on.
/// - The loop's flush list names its sockets by the same rule: a socket clears its entry in `deinit`.
/// Breaking a rule is a use after free, which no check reports: say beside each use which owner it relies on.
@frozen public struct CallbackContext<Object: AnyObject> {
    @usableFromInline let reference: Unmanaged<Object>

    @inlinable @inline(__always)
    public init(_ object: Object) {
        reference = .passUnretained(object)
    }

    /// The object a context pointer from C names; the pointer must have come from `pointer`.
    @inlinable @inline(__always)
    public init(_ pointer: UnsafeMutableRawPointer) {
        reference = .fromOpaque(pointer)
    }

    /// The pointer to hand to C as the callback's context.
    @inlinable @inline(__always)
    public var pointer: UnsafeMutableRawPointer { reference.toOpaque() }

    /// The object, as a strong reference for the caller's scope.
    @inlinable @inline(__always)
    public var object: Object { reference.takeUnretainedValue() }
}
