#ifndef FANOUT_CLIBEVENT_SHIM_H
#define FANOUT_CLIBEVENT_SHIM_H

// <sys/types.h> must come first: Debian's event2/event-config.h defines _GNU_SOURCE, and if glibc's
// headers are first read after that, fd_set is declared without __fds_bits on a clean build.
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <netdb.h>
// SIOCOUTQ, which a lingering close polls to learn when the peer has acknowledged its last bytes.
#include <sys/ioctl.h>
#include <linux/sockios.h>

#include <event2/event.h>
#include <event2/buffer.h>
// evbuffer_setcb, the one call that removes a callback libevent added itself (a socket bufferevent's on its output).
#include <event2/buffer_compat.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <event2/http.h>

// TLS: libevent's OpenSSL bufferevents take OpenSSL's SSL objects. The headers give the types and
// prototypes; the libraries are not linked but loaded on first use (`fanout_tls`), so that a server without
// TLS listeners, users or WebSocket clients never maps libcrypto and libssl (about 1.7 MB resident).
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>
#include <event2/bufferevent_ssl.h>
#include <dlfcn.h>
#include <pthread.h>

// Every OpenSSL and libevent_openssl function the event loop calls: return type, name, parameters.
#define FANOUT_TLS_FUNCTIONS(X) \
    X(const SSL_METHOD *, TLS_server_method, (void)) \
    X(const SSL_METHOD *, TLS_client_method, (void)) \
    X(SSL_CTX *, SSL_CTX_new, (const SSL_METHOD *)) \
    X(void, SSL_CTX_free, (SSL_CTX *)) \
    X(long, SSL_CTX_ctrl, (SSL_CTX *, int, long, void *)) \
    X(uint64_t, SSL_CTX_set_options, (SSL_CTX *, uint64_t)) \
    X(int, SSL_CTX_use_certificate_chain_file, (SSL_CTX *, const char *)) \
    X(int, SSL_CTX_use_PrivateKey_file, (SSL_CTX *, const char *, int)) \
    X(int, SSL_CTX_check_private_key, (const SSL_CTX *)) \
    X(int, SSL_CTX_load_verify_locations, (SSL_CTX *, const char *, const char *)) \
    X(int, SSL_CTX_set_default_verify_paths, (SSL_CTX *)) \
    X(void, SSL_CTX_set_verify, (SSL_CTX *, int, SSL_verify_cb)) \
    X(SSL *, SSL_new, (SSL_CTX *)) \
    X(X509_VERIFY_PARAM *, SSL_get0_param, (SSL *)) \
    X(int, SSL_set1_host, (SSL *, const char *)) \
    X(long, SSL_ctrl, (SSL *, int, long, void *)) \
    X(int, SSL_shutdown, (SSL *)) \
    X(unsigned long, ERR_get_error, (void)) \
    X(void, ERR_clear_error, (void)) \
    X(void, ERR_error_string_n, (unsigned long, char *, size_t)) \
    X(int, X509_VERIFY_PARAM_set1_ip_asc, (X509_VERIFY_PARAM *, const char *)) \
    X(int, EVP_Digest, (const void *, size_t, unsigned char *, unsigned int *, const EVP_MD *, ENGINE *)) \
    X(const EVP_MD *, EVP_sha256, (void)) \
    X(const EVP_MD *, EVP_sha1, (void)) \
    X(struct bufferevent *, bufferevent_openssl_socket_new, \
      (struct event_base *, evutil_socket_t, SSL *, enum bufferevent_ssl_state, int)) \
    X(void, bufferevent_openssl_set_allow_dirty_shutdown, (struct bufferevent *, int)) \
    X(SSL *, bufferevent_openssl_get_ssl, (struct bufferevent *)) \
    X(unsigned long, bufferevent_get_openssl_error, (struct bufferevent *))

typedef struct fanout_tls_api {
#define FANOUT_TLS_FIELD(type, name, parameters) type (*name) parameters;
    FANOUT_TLS_FUNCTIONS(FANOUT_TLS_FIELD)
#undef FANOUT_TLS_FIELD
} fanout_tls_api;

typedef struct fanout_tls_storage {
    fanout_tls_api api;
    int complete;
    pthread_once_t once;
} fanout_tls_storage;

// State kept in a function's static (Swift emits a header's functions, not its global variables).
static inline fanout_tls_storage *fanout_tls_shared(void) {
    static fanout_tls_storage storage = { .once = PTHREAD_ONCE_INIT };
    return &storage;
}

static inline void fanout_tls_load(void) {
    fanout_tls_storage *storage = fanout_tls_shared();
    // Debian's sonames (libssl3, libevent-openssl-2.1-7); the package depends on both.
    void *crypto = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_GLOBAL);
    void *ssl = crypto ? dlopen("libssl.so.3", RTLD_NOW | RTLD_GLOBAL) : NULL;
    void *event = ssl ? dlopen("libevent_openssl-2.1.so.7", RTLD_NOW | RTLD_GLOBAL) : NULL;
    if (!event) return;
    int complete = 1;
#define FANOUT_TLS_RESOLVE(type, name, parameters) \
    storage->api.name = (type (*) parameters)dlsym(RTLD_DEFAULT, #name); \
    if (!storage->api.name) complete = 0;
    FANOUT_TLS_FUNCTIONS(FANOUT_TLS_RESOLVE)
#undef FANOUT_TLS_RESOLVE
    storage->complete = complete;
}

/// OpenSSL and libevent's OpenSSL bufferevents, loaded on the first call from any thread; NULL when they
/// cannot be loaded (`fanout_tls_error` says why).
static inline const fanout_tls_api *fanout_tls(void) {
    fanout_tls_storage *storage = fanout_tls_shared();
    pthread_once(&storage->once, fanout_tls_load);
    return storage->complete ? &storage->api : NULL;
}

static inline const char *fanout_tls_error(void) {
    const char *error = dlerror();
    return error ? error : "a function is missing from libssl, libcrypto or libevent_openssl";
}

/// Sets the priority of a bufferevent's read and write events, which libevent 2.1's bufferevent_priority_set
/// refuses for any bufferevent but a plain socket's; an OpenSSL bufferevent (without an underlying one) does its
/// I/O and its handshake in these two events. struct bufferevent (event2/bufferevent_struct.h, not included:
/// it would make the type complete for Swift) begins with its event_base, its ops, then ev_read and ev_write.
/// Returns -1, changing nothing, if the read event found there is not on the bufferevent's base and descriptor,
/// or if an event is active at the moment.
static inline int fanout_bufferevent_set_event_priority(struct bufferevent *bev, int priority) {
    char *events = (char *)bev + 2 * sizeof(void *);
    struct event *readEvent = (struct event *)events;
    struct event *writeEvent = (struct event *)(events + event_get_struct_event_size());
    if (event_get_base(readEvent) != bufferevent_get_base(bev) || event_get_fd(readEvent) != bufferevent_getfd(bev))
        return -1;
    if (event_priority_set(readEvent, priority) < 0) return -1;
    return event_priority_set(writeEvent, priority);
}

#endif
