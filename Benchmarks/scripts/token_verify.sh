#!/usr/bin/env bash
# Measures TokenVerifier.verify per token for HS256, RS256 and ES256 (tokens minted by PyJWT, with iss, aud,
# exp and a fanout claim of 3 patterns): medians of 41 batches. Run from the repository or Benchmarks/.
#   Benchmarks/scripts/token_verify.sh
# The verifier's sources are compiled with -O into one binary (as scripts/fuzz.sh does), so the measurement
# needs neither the benchmark package nor a release build of the daemon.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=".build/token-verify"
rm -rf "$work"
mkdir -p "$work/src"
for file in Sources/FanoutProtocol/*.swift Sources/FanoutCrypto/*.swift Sources/FanoutTokens/*.swift; do
    sed -E '/^(public )?import (FanoutProtocol|FanoutCrypto|FanoutTokens)$/d' "$file" \
        > "$work/src/$(basename "$(dirname "$file")")-$(basename "$file")"
done
cp Benchmarks/TokenVerify/main.swift "$work/src/main.swift"
swiftc -O -module-name TokenVerify "$work"/src/*.swift -I Sources/CCrypto -o "$work/token-verify"
python3 - "$work" <<'PY'
import sys, jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
work = sys.argv[1]
secret = b"benchmark-secret-0123456789abcdef0123456789abcdef"
rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
ec_key = ec.generate_private_key(ec.SECP256R1())
def pem(key):
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
claims = {"sub": "user-1234", "iss": "https://app.example", "aud": "fanout", "iat": 1_699_999_990,
          "exp": 1_700_000_600, "fanout": {"publish": ["chat.room42.in"], "subscribe": ["chat.room42.>", "user.1234"]}}
open(f"{work}/secret", "wb").write(secret)
open(f"{work}/rsa.pem", "wb").write(pem(rsa_key))
open(f"{work}/ec.pem", "wb").write(pem(ec_key))
open(f"{work}/tokens", "w").write("\n".join([jwt.encode(claims, secret, algorithm="HS256"),
                                             jwt.encode(claims, rsa_key, algorithm="RS256"),
                                             jwt.encode(claims, ec_key, algorithm="ES256")]) + "\n")
PY
"$work/token-verify" "$work/secret" "$work/rsa.pem" "$work/ec.pem" "$work/tokens"
