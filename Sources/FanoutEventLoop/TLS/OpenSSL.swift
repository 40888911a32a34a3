import CLibevent

/// OpenSSL and libevent's OpenSSL bufferevents, loaded on first use rather than linked (see `fanout_tls` in
/// CLibevent's shim.h): a server with no TLS listener, no users and no WebSocket client never maps them.
enum OpenSSL {
    /// The functions, loading them on the first call; a `SystemError` says why they cannot be loaded.
    static func functions() throws(SystemError) -> fanout_tls_api {
        guard let loaded = fanout_tls() else {
            throw SystemError(errno: 0, operation: "load OpenSSL (libssl3 and libevent-openssl-2.1-7): "
                              + String(cString: fanout_tls_error()))
        }
        return loaded.pointee
    }
}
