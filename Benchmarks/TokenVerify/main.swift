// Time per token of TokenVerifier.verify, compiled with -O together with the sources of FanoutProtocol,
// FanoutCrypto and FanoutTokens by scripts/token_verify.sh, which mints the tokens with PyJWT and passes them
// in the files named on the command line: <secret> <rsa.pem> <ec.pem> <tokens>, the last one token per line
// (HS256, RS256, ES256). Each case runs `batches` batches of `perBatch` verifications; the median and the
// 90th percentile of the batches' time per token are printed.
import FoundationEssentials

func readFile(_ path: String) -> [UInt8] {
    guard let data = try? Data(contentsOf: URL(fileURLWithPath: path)) else { fatalError("cannot read \(path)") }
    return Array(data)
}

let arguments = CommandLine.arguments
let secret = readFile(arguments[1])
let keys = try! TokenKeys(hmacSecret: secret, publicKeyPEM: readFile(arguments[2]), jwks: nil)
let ecKeys = try! TokenKeys(hmacSecret: nil, publicKeyPEM: readFile(arguments[3]), jwks: nil)
let tokens = String(decoding: readFile(arguments[4]), as: UTF8.self).split(separator: "\n").map(String.init)
let now: Int64 = 1_700_000_000
let verifier = TokenVerifier(keys: keys, rules: TokenRules(issuer: "https://app.example", audience: "fanout"))
let ecVerifier = TokenVerifier(keys: ecKeys, rules: TokenRules(issuer: "https://app.example", audience: "fanout"))

var badSignature = Array(tokens[0].utf8)
badSignature[badSignature.count - 5] = badSignature[badSignature.count - 5] == UInt8(ascii: "A") ? 66 : 65
let huge = "eyJhbGciOiJIUzI1NiJ9." + String(repeating: "A", count: 1 << 20) + ".c2ln"

let cases: [(String, TokenVerifier, String, Bool)] = [
    ("HS256", verifier, tokens[0], true),
    ("RS256", verifier, tokens[1], true),
    ("ES256", ecVerifier, tokens[2], true),
    ("HS256 bad signature", verifier, String(decoding: badSignature, as: UTF8.self), false),
    ("1 MiB token (refused)", verifier, huge, false),
]

let batches = 41
for (name, verifier, token, valid) in cases {
    let perBatch = name.hasPrefix("RS") || name.hasPrefix("ES") ? 200 : 2000
    func verifies() -> Bool { (try? verifier.verify(token, now: now).get()) != nil }
    guard verifies() == valid else { fatalError("\(name): wrong outcome") }
    var samples: [Double] = []
    for _ in 0..<batches {
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for _ in 0..<perBatch { precondition(verifies() == valid) }
        }
        let (seconds, attoseconds) = elapsed.components
        samples.append((Double(seconds) * 1e9 + Double(attoseconds) / 1e9) / Double(perBatch))
    }
    samples.sort()
    let median = samples[batches / 2]
    let p90 = samples[batches * 9 / 10]
    print("\(name): median \(Int(median.rounded())) ns per token, p90 \(Int(p90.rounded())) ns "
          + "(\(batches) batches of \(perBatch))")
}
