import CLibevent

/// Message digests from OpenSSL's libcrypto, loaded on the first digest (`OpenSSL`).
public enum Digest {
    /// The SHA-256 of `bytes` (32 bytes).
    public static func sha256(_ bytes: some Collection<UInt8>) -> [UInt8] {
        digest(bytes, { $0.EVP_sha256!() }, length: 32, name: "SHA-256")
    }

    /// The SHA-1 of `bytes` (20 bytes). Only for WebSocket's accept value (RFC 6455 §4.2.2), which names
    /// SHA-1 as a fixed transform, not for anything that needs collision resistance.
    public static func sha1(_ bytes: some Collection<UInt8>) -> [UInt8] {
        digest(bytes, { $0.EVP_sha1!() }, length: 20, name: "SHA-1")
    }

    private static func digest(_ bytes: some Collection<UInt8>, _ type: (fanout_tls_api) -> OpaquePointer?,
                               length expected: Int, name: String) -> [UInt8] {
        // The package depends on libssl3: without it no digest has an answer.
        let openSSL: fanout_tls_api
        do { openSSL = try OpenSSL.functions() } catch { preconditionFailure("\(name): \(error)") }
        let input = Array(bytes)
        var output = [UInt8](repeating: 0, count: expected)
        var length: UInt32 = 0
        let status = input.withUnsafeBytes { raw in
            output.withUnsafeMutableBufferPointer { digest in
                openSSL.EVP_Digest!(raw.baseAddress, raw.count, digest.baseAddress, &length, type(openSSL), nil)
            }
        }
        // Only an allocation failure inside OpenSSL can fail a digest of memory; there is no answer then.
        precondition(status == 1 && Int(length) == expected, "EVP_Digest(\(name)) failed")
        return output
    }
}
