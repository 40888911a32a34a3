/*
 * fanout-c: the plain-C baseline for scenario H. A minimal server for the Fanout wire protocol (greeting,
 * SUB, PUB, PING, QUIT) written the straightforward way on libevent bufferevents: one bufferevent per
 * client, lines read with evbuffer_readln, and each published message formatted once and written to every
 * subscriber with bufferevent_write. No auth, limits, wildcards or slow-consumer handling: it measures the
 * cost of the work itself, so `fanout bench` can compare fanoutd against it in the same run.
 *
 *   cc -O2 -o fanout-c fanout-c.c -levent      (or: make -C Benchmarks/c-baseline)
 *   ./fanout-c --listen 127.0.0.1:7500
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct client;

struct subject {
    char *name;
    unsigned long long seq;
    struct client **members;
    size_t count, capacity;
    struct subject *next;
};

struct client {
    struct bufferevent *bev;
    struct subject **subjects; /* what this client subscribes to, for removal on close */
    size_t count, capacity;
};

#define BUCKETS 65536
static struct subject *table[BUCKETS];

static unsigned hash(const char *text, size_t length) {
    unsigned value = 2166136261u;
    for (size_t i = 0; i < length; i++) value = (value ^ (unsigned char)text[i]) * 16777619u;
    return value & (BUCKETS - 1);
}

static struct subject *find(const char *name, size_t length, int create) {
    unsigned bucket = hash(name, length);
    for (struct subject *s = table[bucket]; s; s = s->next)
        if (strlen(s->name) == length && memcmp(s->name, name, length) == 0) return s;
    if (!create) return NULL;
    struct subject *s = calloc(1, sizeof *s);
    s->name = strndup(name, length);
    s->next = table[bucket];
    table[bucket] = s;
    return s;
}

static void grow(void *array, size_t *capacity, size_t size) {
    void **pointer = array;
    *capacity = *capacity ? *capacity * 2 : 4;
    *pointer = realloc(*pointer, *capacity * size);
}

static void subscribe(struct client *c, const char *name, size_t length) {
    struct subject *s = find(name, length, 1);
    for (size_t i = 0; i < s->count; i++)
        if (s->members[i] == c) return;
    if (s->count == s->capacity) grow(&s->members, &s->capacity, sizeof *s->members);
    s->members[s->count++] = c;
    if (c->count == c->capacity) grow(&c->subjects, &c->capacity, sizeof *c->subjects);
    c->subjects[c->count++] = s;
}

static void drop(struct client *c) {
    for (size_t i = 0; i < c->count; i++) {
        struct subject *s = c->subjects[i];
        for (size_t j = 0; j < s->count; j++)
            if (s->members[j] == c) { s->members[j] = s->members[--s->count]; break; }
    }
    free(c->subjects);
    bufferevent_free(c->bev);
    free(c);
}

static void reply(struct client *c, const char *text) {
    bufferevent_write(c->bev, text, strlen(text));
}

static void publish(struct client *c, const char *name, size_t length, const char *payload, size_t size) {
    struct subject *s = find(name, length, 0);
    size_t receivers = s ? s->count : 0;
    if (s && receivers) {
        s->seq++;
        size_t needed = length + size + 32;
        char stack[4096];
        char *line = needed <= sizeof stack ? stack : malloc(needed);
        int n = snprintf(line, needed, "MSG %.*s %llu ", (int)length, name, s->seq);
        memcpy(line + n, payload, size);
        line[n + size] = '\n';
        for (size_t i = 0; i < receivers; i++) bufferevent_write(s->members[i]->bev, line, n + size + 1);
        if (line != stack) free(line);
    }
    char text[32];
    snprintf(text, sizeof text, "+OK %zu\n", receivers);
    reply(c, text);
}

static void on_read(struct bufferevent *bev, void *context) {
    struct client *c = context;
    struct evbuffer *input = bufferevent_get_input(bev);
    size_t length;
    char *line;
    while ((line = evbuffer_readln(input, &length, EVBUFFER_EOL_CRLF))) {
        if (strncmp(line, "PUB ", 4) == 0) {
            char *subject = line + 4;
            char *space = memchr(subject, ' ', length - 4);
            size_t subject_length = space ? (size_t)(space - subject) : length - 4;
            char *payload = space ? space + 1 : line + length;
            publish(c, subject, subject_length, payload, (size_t)(line + length - payload));
        } else if (strncmp(line, "SUB ", 4) == 0) {
            char *cursor = line + 4, *end = line + length;
            while (cursor < end) {
                char *space = memchr(cursor, ' ', (size_t)(end - cursor));
                size_t word = space ? (size_t)(space - cursor) : (size_t)(end - cursor);
                if (word) subscribe(c, cursor, word);
                cursor += word + 1;
            }
            char text[32];
            snprintf(text, sizeof text, "+OK %zu\n", c->count);
            reply(c, text);
        } else if (strncmp(line, "PING", 4) == 0) {
            reply(c, "+PONG\n");
        } else if (strcmp(line, "QUIT") == 0) {
            free(line);
            drop(c);
            return;
        } else {
            reply(c, "-ERR unknown-command not supported by the C baseline\n");
        }
        free(line);
    }
}

static void on_event(struct bufferevent *bev, short what, void *context) {
    (void)bev;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) drop(context);
}

static void on_accept(struct evconnlistener *listener, evutil_socket_t fd, struct sockaddr *address, int length,
                      void *context) {
    (void)listener; (void)address; (void)length;
    struct event_base *base = context;
    struct client *c = calloc(1, sizeof *c);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    reply(c, "+HELLO fanout/1 c-baseline auth=none\n");
}

static void on_signal(evutil_socket_t signal, short what, void *context) {
    (void)signal; (void)what;
    event_base_loopbreak(context);
}

int main(int argc, char **argv) {
    const char *listen = "127.0.0.1:7500";
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--listen") == 0) listen = argv[i + 1];
    char host[64];
    const char *colon = strrchr(listen, ':');
    if (!colon || (size_t)(colon - listen) >= sizeof host) {
        fprintf(stderr, "fanout-c: --listen HOST:PORT\n");
        return 64;
    }
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = 0;
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(colon + 1))};
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) {
        fprintf(stderr, "fanout-c: bad address %s\n", listen);
        return 64;
    }
    signal(SIGPIPE, SIG_IGN);
    struct event_base *base = event_base_new();
    struct evconnlistener *listener = evconnlistener_new_bind(
        base, on_accept, base, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 1024, (struct sockaddr *)&address,
        sizeof address);
    if (!listener) {
        fprintf(stderr, "fanout-c: cannot listen on %s: %s\n", listen, strerror(errno));
        return 1;
    }
    struct event *term = evsignal_new(base, SIGTERM, on_signal, base);
    struct event *interrupt = evsignal_new(base, SIGINT, on_signal, base);
    event_add(term, NULL);
    event_add(interrupt, NULL);
    event_base_dispatch(base);
    event_free(term);
    event_free(interrupt);
    evconnlistener_free(listener);
    event_base_free(base);
    return 0;
}
