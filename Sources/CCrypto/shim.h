#ifndef FANOUT_CCRYPTO_SHIM_H
#define FANOUT_CCRYPTO_SHIM_H

// libcrypto for application tokens (HMAC, RSA and ECDSA signature checks). The headers give the types and
// prototypes; the library is not linked but loaded on first use (`fanout_crypto`), as CLibevent's shim does
// for TLS, so that a server without token keys never maps libcrypto.
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <dlfcn.h>
#include <pthread.h>

// Every libcrypto function FanoutCrypto calls: return type, name, parameters.
#define FANOUT_CRYPTO_FUNCTIONS(X) \
    X(unsigned char *, HMAC, (const EVP_MD *, const void *, int, const unsigned char *, size_t, unsigned char *, \
      unsigned int *)) \
    X(int, CRYPTO_memcmp, (const void *, const void *, size_t)) \
    X(EVP_PKEY *, d2i_PUBKEY, (EVP_PKEY **, const unsigned char **, long)) \
    X(void, EVP_PKEY_free, (EVP_PKEY *)) \
    X(int, EVP_PKEY_get_base_id, (const EVP_PKEY *)) \
    X(int, EVP_PKEY_get_bits, (const EVP_PKEY *)) \
    X(int, EVP_PKEY_get_group_name, (const EVP_PKEY *, char *, size_t, size_t *)) \
    X(EVP_MD_CTX *, EVP_MD_CTX_new, (void)) \
    X(void, EVP_MD_CTX_free, (EVP_MD_CTX *)) \
    X(int, EVP_DigestVerifyInit, (EVP_MD_CTX *, EVP_PKEY_CTX **, const EVP_MD *, ENGINE *, EVP_PKEY *)) \
    X(int, EVP_DigestVerify, (EVP_MD_CTX *, const unsigned char *, size_t, const unsigned char *, size_t)) \
    X(const EVP_MD *, EVP_sha256, (void)) \
    X(const EVP_MD *, EVP_sha384, (void)) \
    X(const EVP_MD *, EVP_sha512, (void)) \
    X(void, ERR_clear_error, (void))

typedef struct fanout_crypto_api {
#define FANOUT_CRYPTO_FIELD(type, name, parameters) type (*name) parameters;
    FANOUT_CRYPTO_FUNCTIONS(FANOUT_CRYPTO_FIELD)
#undef FANOUT_CRYPTO_FIELD
} fanout_crypto_api;

typedef struct fanout_crypto_storage {
    fanout_crypto_api api;
    int complete;
    // dlerror's text when loading failed: kept because dlerror forgets it on the next call from any code.
    char error[256];
    pthread_once_t once;
} fanout_crypto_storage;

// State kept in a function's static (Swift emits a header's functions, not its global variables).
static inline fanout_crypto_storage *fanout_crypto_shared(void) {
    static fanout_crypto_storage storage = { .once = PTHREAD_ONCE_INIT };
    return &storage;
}

static inline void fanout_crypto_load(void) {
    fanout_crypto_storage *storage = fanout_crypto_shared();
    // Debian's soname (libssl3); the package depends on it. The handle is kept for the process's life.
    void *crypto = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_GLOBAL);
    if (!crypto) {
        const char *error = dlerror();
        snprintf(storage->error, sizeof storage->error, "%s", error ? error : "libcrypto.so.3 could not be loaded");
        return;
    }
    int complete = 1;
#define FANOUT_CRYPTO_RESOLVE(type, name, parameters) \
    storage->api.name = (type (*) parameters)dlsym(crypto, #name); \
    if (!storage->api.name) complete = 0;
    FANOUT_CRYPTO_FUNCTIONS(FANOUT_CRYPTO_RESOLVE)
#undef FANOUT_CRYPTO_RESOLVE
    if (!complete) snprintf(storage->error, sizeof storage->error, "a function is missing from libcrypto.so.3");
    storage->complete = complete;
}

/// libcrypto, loaded on the first call from any thread; NULL when it cannot be loaded (`fanout_crypto_error`
/// says why).
static inline const fanout_crypto_api *fanout_crypto(void) {
    fanout_crypto_storage *storage = fanout_crypto_shared();
    pthread_once(&storage->once, fanout_crypto_load);
    return storage->complete ? &storage->api : NULL;
}

static inline const char *fanout_crypto_error(void) {
    return fanout_crypto_shared()->error;
}

#endif
