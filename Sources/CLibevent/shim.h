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
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <event2/http.h>

// TLS: libevent's OpenSSL bufferevents take OpenSSL's SSL objects.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <event2/bufferevent_ssl.h>

#endif
