#!/usr/bin/env python3
"""Writes vectors.json: TEST-ONLY keys and the tokens FanoutTokensTests checks, minted with PyJWT and
cryptography the way an application's backend mints them. The keys are made here, for the tests, and protect
nothing. The tests pass `now` (NOW below) to the verifier, so the vectors do not age.

Run again (python3 make_vectors.py) to replace them; the tests read only vectors.json."""
import base64
import hashlib
import hmac
import json

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

NOW = 1_700_000_000
SECRET = "test-only-hmac-secret-for-FanoutTokensTests-0123456789abcdef0123456789"
GRANT = {"publish": ["chat.room42.in"], "subscribe": ["chat.room42.>", "user.1234"],
         "subscribe_deny": ["chat.room42.admin"], "admin": False}


def b64(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def pem(key):
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def claims(**extra):
    base = {"sub": "user-1234", "iat": NOW - 10, "exp": NOW + 600, "fanout": GRANT}
    base.update(extra)
    return {k: v for k, v in base.items() if v is not None}


def unsigned(header, payload, signature=b""):
    part = lambda obj: b64(json.dumps(obj, separators=(",", ":")).encode())
    return part(header) + "." + part(payload) + "." + b64(signature)


rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
rsa_key2 = rsa.generate_private_key(public_exponent=65537, key_size=2048)
ec_key = ec.generate_private_key(ec.SECP256R1())
ec_key2 = ec.generate_private_key(ec.SECP256R1())
rsa_pem = pem(rsa_key)

tokens = {}
for alg in ("HS256", "HS384", "HS512"):
    tokens[alg] = jwt.encode(claims(), SECRET, algorithm=alg)
tokens["RS256"] = jwt.encode(claims(), rsa_key, algorithm="RS256")
tokens["ES256"] = jwt.encode(claims(), ec_key, algorithm="ES256")
# An ES256 signature whose R starts with a zero byte (1 in 256 do): its DER integer is shorter.
for serial in range(100_000):
    candidate = jwt.encode(claims(jti=str(serial)), ec_key, algorithm="ES256")
    if base64.urlsafe_b64decode(candidate.rsplit(".", 1)[1] + "==")[0] == 0:
        tokens["ES256_short_r"] = candidate
        break
tokens["no_grant"] = jwt.encode(claims(fanout=None), SECRET, algorithm="HS256")
tokens["no_exp"] = jwt.encode(claims(exp=None), SECRET, algorithm="HS256")
tokens["expired"] = jwt.encode(claims(exp=NOW - 60), SECRET, algorithm="HS256")
tokens["expired_within_leeway"] = jwt.encode(claims(exp=NOW - 3), SECRET, algorithm="HS256")
tokens["fractional_exp"] = jwt.encode(claims(exp=NOW + 0.5), SECRET, algorithm="HS256")
tokens["not_yet_valid"] = jwt.encode(claims(nbf=NOW + 60), SECRET, algorithm="HS256")
tokens["issued_in_future"] = jwt.encode(claims(iat=NOW + 60), SECRET, algorithm="HS256")
tokens["issuer_and_audience"] = jwt.encode(claims(iss="https://app.example", aud=["other", "fanout"]),
                                           SECRET, algorithm="HS256")
tokens["audience_string"] = jwt.encode(claims(iss="https://app.example", aud="fanout"), SECRET, algorithm="HS256")
tokens["no_subject"] = jwt.encode(claims(sub=None), SECRET, algorithm="HS256")
tokens["bad_pattern"] = jwt.encode(claims(fanout={"subscribe": ["chat..room"]}), SECRET, algorithm="HS256")
tokens["string_exp"] = jwt.encode(claims(exp="2000000000"), SECRET, algorithm="HS256")
tokens["crit"] = jwt.encode(claims(), SECRET, algorithm="HS256", headers={"crit": ["exp"]})
# alg none, as RFC 7519 §6 writes it (empty signature), and with a signature part that is not empty.
tokens["none_unsigned"] = unsigned({"alg": "none", "typ": "JWT"}, claims())
tokens["none_signed"] = unsigned({"alg": "none", "typ": "JWT"}, claims(), b"x" * 32)
# The RSA public key's PEM text used as an HMAC secret: what a verifier that lets alg choose the key accepts.
# PyJWT refuses to sign it (it knows the attack), so the HMAC is made by hand.
signing_input = unsigned({"alg": "HS256", "typ": "JWT"}, claims()).rsplit(".", 1)[0]
tokens["rsa_pem_as_hmac_secret"] = signing_input + "." + b64(
    hmac.new(rsa_pem.encode(), signing_input.encode(), hashlib.sha256).digest())
# JWKS: two RSA keys and two P-256 keys, picked by kid.
tokens["jwks_r1"] = jwt.encode(claims(sub="r1-user"), rsa_key, algorithm="RS256", headers={"kid": "r1"})
tokens["jwks_r2"] = jwt.encode(claims(sub="r2-user"), rsa_key2, algorithm="RS256", headers={"kid": "r2"})
tokens["jwks_e1"] = jwt.encode(claims(sub="e1-user"), ec_key, algorithm="ES256", headers={"kid": "e1"})
tokens["jwks_e2"] = jwt.encode(claims(sub="e2-user"), ec_key2, algorithm="ES256", headers={"kid": "e2"})
tokens["jwks_r2_signed_by_r1"] = jwt.encode(claims(), rsa_key, algorithm="RS256", headers={"kid": "r2"})
tokens["jwks_unknown_kid"] = jwt.encode(claims(), rsa_key, algorithm="RS256", headers={"kid": "r9"})
tokens["jwks_no_kid"] = jwt.encode(claims(), rsa_key, algorithm="RS256")
tokens["jwks_e1_as_rs256"] = jwt.encode(claims(), rsa_key, algorithm="RS256", headers={"kid": "e1"})

jwks = {"keys": [
    {**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(rsa_key.public_key())), "kid": "r1", "use": "sig"},
    {**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(rsa_key2.public_key())), "kid": "r2", "alg": "RS256"},
    {**json.loads(jwt.algorithms.ECAlgorithm.to_jwk(ec_key.public_key())), "kid": "e1"},
    {**json.loads(jwt.algorithms.ECAlgorithm.to_jwk(ec_key2.public_key())), "kid": "e2"},
    {"kty": "oct", "kid": "skipped", "k": b64(b"not used")},
]}
single_jwks = {"keys": [json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(rsa_key.public_key()))]}

rsa_pkcs1 = rsa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.PKCS1).decode()
small_rsa = rsa.generate_private_key(public_exponent=65537, key_size=1024)
k1 = ec.generate_private_key(ec.SECP256K1())
vectors = {
    "about": "TEST-ONLY keys and tokens for FanoutTokensTests, made by make_vectors.py; they protect nothing. "
             "The private keys were never kept.",
    "now": NOW, "hmac_secret": SECRET, "rsa_public_pem": rsa_pem, "rsa_public_pkcs1_pem": rsa_pkcs1,
    "ec_public_pem": pem(ec_key), "jwks": json.dumps(jwks), "single_jwks": json.dumps(single_jwks),
    "rsa_1024_public_pem": pem(small_rsa), "secp256k1_public_pem": pem(k1), "tokens": tokens,
}
with open("vectors.json", "w") as out:
    json.dump(vectors, out, indent=1, sort_keys=True)
    out.write("\n")
