internal import CCrypto

/// A failure of libcrypto itself (not loadable, out of memory), as opposed to a signature that does not verify.
/// Its text names the library and the call, never key material.
public struct CryptoError: Error, CustomStringConvertible, Sendable {
    public let description: String

    init(_ description: String) { self.description = description }
}

/// The loaded libcrypto, or the error that says why it is not there.
func libcrypto() throws(CryptoError) -> UnsafePointer<fanout_crypto_api> {
    guard let api = fanout_crypto() else {
        throw CryptoError("libcrypto is unavailable: " + String(cString: fanout_crypto_error()))
    }
    return api
}

/// Loads libcrypto now, so that a configuration that needs it fails when it is read rather than on the first
/// token.
public func ensureCryptoAvailable() throws(CryptoError) {
    _ = try libcrypto()
}
