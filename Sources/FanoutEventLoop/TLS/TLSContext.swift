import CLibevent
#if canImport(Glibc)
import Glibc
#endif

/// An OpenSSL context (`SSL_CTX`) for TLS sockets: certificates, keys and what to verify.
public final class TLSContext {
    let context: OpaquePointer
    /// OpenSSL's functions, loaded by the first context.
    let openSSL: fanout_tls_api

    /// A server context: `certificateChain` and `privateKey` are PEM files; with `clientCA`, clients must
    /// present a certificate signed by it (mutual TLS).
    public init(certificateChain: String, privateKey: String, clientCA: String?) throws(SystemError) {
        let openSSL = try OpenSSL.functions()
        self.openSSL = openSSL
        // Once `context` is set, a throw still runs deinit, which frees it: no free on the error paths.
        context = try Self.makeContext(openSSL, openSSL.TLS_server_method!(), "server")
        try check("load certificate \(certificateChain)") { openSSL.SSL_CTX_use_certificate_chain_file!(context, certificateChain) }
        try check("load private key \(privateKey)") { openSSL.SSL_CTX_use_PrivateKey_file!(context, privateKey, SSL_FILETYPE_PEM) }
        try check("match private key \(privateKey) with \(certificateChain)") { openSSL.SSL_CTX_check_private_key!(context) }
        if let clientCA {
            try check("load client CA \(clientCA)") { openSSL.SSL_CTX_load_verify_locations!(context, clientCA, nil) }
            openSSL.SSL_CTX_set_verify!(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        }
    }

    /// A client context: verifies the server against `serverCA` (or the system's CAs), and presents
    /// `certificate`/`privateKey` when given (for servers that require client certificates).
    public init(serverCA: String?, certificate: String?, privateKey: String?) throws(SystemError) {
        let openSSL = try OpenSSL.functions()
        self.openSSL = openSSL
        context = try Self.makeContext(openSSL, openSSL.TLS_client_method!(), "client")
        if let serverCA {
            try check("load CA \(serverCA)") { openSSL.SSL_CTX_load_verify_locations!(context, serverCA, nil) }
        } else {
            _ = openSSL.SSL_CTX_set_default_verify_paths!(context)
        }
        openSSL.SSL_CTX_set_verify!(context, SSL_VERIFY_PEER, nil)
        if let certificate {
            try check("load certificate \(certificate)") { openSSL.SSL_CTX_use_certificate_chain_file!(context, certificate) }
            try check("load private key \(privateKey ?? certificate)") {
                openSSL.SSL_CTX_use_PrivateKey_file!(context, privateKey ?? certificate, SSL_FILETYPE_PEM)
            }
        }
    }

    deinit {
        openSSL.SSL_CTX_free!(context)
    }

    private static func makeContext(_ openSSL: fanout_tls_api, _ method: OpaquePointer?, _ role: String) throws(SystemError) -> OpaquePointer {
        guard let context = openSSL.SSL_CTX_new!(method) else {
            throw SystemError(errno: 0, operation: "TLS \(role) context: \(lastError(openSSL))")
        }
        // TLS 1.2 or later.
        _ = openSSL.SSL_CTX_ctrl!(context, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
        // SSL_OP_IGNORE_UNEXPECTED_EOF (a function-like macro, so spelled out): OpenSSL 3 would report a peer
        // that closes without close_notify as an error; for a line protocol that is simply the peer leaving.
        _ = openSSL.SSL_CTX_set_options!(context, UInt64(1) << 7)
        // SSL_MODE_RELEASE_BUFFERS (SSL_CTX_set_mode is a macro): OpenSSL gives a connection's 16 KiB read and
        // write buffers back whenever they are empty, instead of holding them for the connection's life. An idle
        // wss:// connection went from 33,430 to 17,977 bytes; the rest is OpenSSL's own state per connection
        // (docs/performance.md).
        _ = openSSL.SSL_CTX_ctrl!(context, SSL_CTRL_MODE, Int(SSL_MODE_RELEASE_BUFFERS), nil)
        return context
    }

    private func check(_ operation: String, _ body: () -> Int32) throws(SystemError) {
        guard body() == 1 else { throw SystemError(errno: 0, operation: "\(operation): \(Self.lastError(openSSL))") }
    }

    /// The oldest OpenSSL error queued on this thread, as text (and the queue cleared).
    static func lastError(_ openSSL: fanout_tls_api, code given: UInt? = nil) -> String {
        let code = given ?? openSSL.ERR_get_error!()
        defer { openSSL.ERR_clear_error!() }
        guard code != 0 else { return "unknown TLS error" }
        var buffer = [CChar](repeating: 0, count: 256)
        openSSL.ERR_error_string_n!(code, &buffer, buffer.count)
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // "error:0A000086:SSL routines::certificate verify failed" -> the reason after the last colon.
        return text.split(separator: ":").last.map(String.init) ?? text
    }

    /// A new SSL object for one connection; for a client, set to verify `serverName` (a host name or IP).
    func makeSSL(verifying serverName: String?) throws(SystemError) -> OpaquePointer {
        guard let ssl = openSSL.SSL_new!(context) else { throw SystemError(errno: 0, operation: "SSL_new: \(Self.lastError(openSSL))") }
        if let serverName {
            if openSSL.X509_VERIFY_PARAM_set1_ip_asc!(openSSL.SSL_get0_param!(ssl), serverName) != 1 {
                openSSL.ERR_clear_error!()
                _ = openSSL.SSL_set1_host!(ssl, serverName)
                // SNI; OpenSSL copies the name during the call.
                var name = Array(serverName.utf8CString)
                name.withUnsafeMutableBytes { bytes in
                    _ = openSSL.SSL_ctrl!(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(TLSEXT_NAMETYPE_host_name), bytes.baseAddress)
                }
            }
        }
        return ssl
    }
}
