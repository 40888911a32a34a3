import CLibevent

/// Bytes built once and queued to many sockets by reference (`evbuffer_add_buffer_reference`).
///
/// Fill it completely before sharing it: libevent shares the chains present at the time of each
/// `write(sharing:)`, and a buffer that has been shared must not be appended to again.
public final class SharedBuffer {
    let evbuffer: OpaquePointer

    public init() {
        evbuffer = evbuffer_new()
    }

    deinit {
        // Sockets that still reference the chains keep them alive; libevent counts those references.
        evbuffer_free(evbuffer)
    }

    public func append(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        evbuffer_add(evbuffer, base, bytes.count)
    }

    public var count: Int { evbuffer_get_length(evbuffer) }
}
