#!/usr/bin/env python3
"""Signs a token the way an application's backend does, with PyJWT.

    mint_token.py ALG KEY_FILE CLAIMS_JSON [HEADERS_JSON]

ALG is HS256, HS384, HS512, RS256 or ES256. KEY_FILE holds the HMAC secret (its trailing newline dropped, as
fanoutd drops it) or a PEM private key. In CLAIMS_JSON, "exp", "nbf" and "iat" given as strings starting with
"+" or "-" are seconds from now ("+2"). Prints the token.

    mint_token.py --keys DIR

writes DIR/rsa.pem and DIR/rsa.pub.pem (RSA 2048), DIR/ec.pem and DIR/ec.pub.pem (P-256), private and public.
"""
import json
import sys
import time

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa


def write_keys(directory):
    for name, key in (("rsa", rsa.generate_private_key(public_exponent=65537, key_size=2048)),
                      ("ec", ec.generate_private_key(ec.SECP256R1()))):
        private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
        with open(f"{directory}/{name}.pem", "wb") as out:
            out.write(private)
        with open(f"{directory}/{name}.pub.pem", "wb") as out:
            out.write(public)


def main():
    if sys.argv[1] == "--keys":
        write_keys(sys.argv[2])
        return
    alg, key_file, claims = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    headers = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
    with open(key_file, "rb") as handle:
        key = handle.read()
    if alg.startswith("HS"):
        key = key.rstrip(b"\r\n")
    now = int(time.time())
    for name in ("exp", "nbf", "iat"):
        value = claims.get(name)
        if isinstance(value, str) and value[:1] in "+-":
            claims[name] = now + int(value)
    print(jwt.encode(claims, key, algorithm=alg, headers=headers))


main()
