extension EventLoop {
    /// The loop's libevent `event_base`, as an opaque pointer, for a C library with its own libevent adapter
    /// (hiredis) to put its sockets on this loop. Only the loop's thread may use it, and only while the loop
    /// lives: hold the `EventLoop` for as long as anything is attached.
    public var opaqueEventBase: OpaquePointer { base }
}
