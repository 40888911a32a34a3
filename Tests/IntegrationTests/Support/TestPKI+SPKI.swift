import Foundation

extension TestPKI {
    /// The base64 SHA-256 of `name`'s public key (its SubjectPublicKeyInfo, DER), with the openssl command: what
    /// Chromium's `--ignore-certificate-errors-spki-list` takes to trust that certificate (a browser that cannot
    /// be given the test CA itself, headless with a throwaway profile).
    func spkiSHA256(of name: String) throws -> String {
        let certificate = path("\(name).pem")
        let pipeline = "openssl x509 -in '\(certificate)' -noout -pubkey | openssl pkey -pubin -outform der"
            + " | openssl dgst -sha256 -binary | base64"
        let run = try ExternalProgram(path: "/bin/bash", ["-o", "pipefail", "-c", pipeline],
                                      input: .none, finishTimeout: 10).finish()
        guard run.status == 0, let hash = run.stdout.first, hash.count == 44 else {
            throw TestFailure("no SPKI hash of \(name).pem: \((run.stdout + run.stderr).joined(separator: "\n"))")
        }
        return hash
    }
}
