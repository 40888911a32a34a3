// storage_bench: the CPU cost per stored message of three ways to keep fanoutd's history on disk, under the
// daemon's workload (README.md beside this file says what is measured and why).
//
//   seg         the daemon's own append-only segment files, modelled on Sources/FanoutHistoryDisk: records
//               encoded into a batch buffer, sealed with CRC-32C (SSE 4.2, three records at a time), written with
//               O_DIRECT from a 4096-aligned staging buffer in whole blocks into 64 MiB segments; an emptied
//               segment is kept as the spare and written over for the next one; fdatasync as the policy says.
//               One batch per writer pass (one pwrite per batch).
//   seg-pass    seg with 10 batches per writer pass (--pass-batches), as the everysec writer gathers them.
//   *-pass      sqlite-log, lmdb with one transaction per 10 batches: the same gathering (everysec only).
//   sqlite-pk   SQLite, WAL, one WITHOUT ROWID table keyed (subject id, seq); trim: DELETE ... seq <= last-1000.
//   sqlite-log  SQLite, WAL, a rowid table in arrival order (no index); trim: DELETE of rowid ranges, the rows
//               found through the same in-memory bookkeeping the daemon keeps for its segments.
//   lmdb        LMDB, key = subject id (u32 BE) + seq (u64 BE), value = ts + payload; trim: cursor deletes.
//   lmdb-wm     lmdb opened with MDB_WRITEMAP.
//   lmdb-log    LMDB, key = arrival number (u64 BE, MDB_APPEND), value = subject, seq, ts, payload.
//
// Everything runs on one thread, so getrusage(RUSAGE_SELF) is the cost of the work, kernel time included.
// Build: make (cc -std=c11 -O2 ... -lsqlite3 -llmdb). Run: taskset -c 1 ./storage_bench [options]; --help.

#define _GNU_SOURCE
#include "crc32c.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lmdb.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

// ---------------------------------------------------------------------------------------------------------------
// Workload

enum { BATCH = 100, PAYLOAD = 100, KEEP = 1000 };
enum policy { EVERYSEC, ALWAYS };
static const char *const policy_names[] = {"everysec", "always"};

static void die(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "storage_bench: ");
    vfprintf(stderr, fmt, args);
    fprintf(stderr, "\n");
    va_end(args);
    exit(1);
}

static void *xcalloc(size_t count, size_t size) {
    void *p = calloc(count, size);
    if (!p) die("out of memory");
    return p;
}

static int64_t clock_ns(clockid_t clock) {
    struct timespec now;
    clock_gettime(clock, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

// One publish run: BATCH messages, their subjects (indexes into the workload's names), one wall-clock reading
// (the daemon reads the clock once per run), and the payload, whose first 8 bytes carry a running number.
struct batch {
    int subject[BATCH];
    int64_t wall_ns;
};

struct workload {
    int subjects;
    char **name;
    uint16_t *name_len;
    uint8_t payload[PAYLOAD];
};

static void payload_for(struct workload *w, uint64_t n) { memcpy(w->payload, &n, sizeof n); }

// ---------------------------------------------------------------------------------------------------------------
// CRC-32C: the daemon's own (Sources/CCRC32C, compiled in by the Makefile), with a table where the
// instruction is missing.

static uint32_t crc_table[256];
static int crc_hw;

static void crc_init(void) {
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[b] = c;
    }
    crc_hw = fanout_crc32c_hardware();
}

static uint32_t crc_update_table(uint32_t crc, const uint8_t *p, size_t n) {
    while (n--) crc = (crc >> 8) ^ crc_table[(crc ^ *p++) & 0xFF];
    return crc;
}

// The CRC of p[0..n), continuing from crc (0 to start), like CRC32C.checksum.
static uint32_t crc32c(uint32_t crc, const void *p, size_t n) {
    if (crc_hw) return ~fanout_crc32c_update(~crc, p, n);
    return ~crc_update_table(~crc, p, n);
}

static void crc32c3(uint32_t seed, const uint8_t *const p[3], const size_t n[3], uint32_t out[3]) {
    if (crc_hw) {
        uint32_t r[3] = {~seed, ~seed, ~seed};
        fanout_crc32c_update3(r, (const void *const *)p, n);
        for (int i = 0; i < 3; i++) out[i] = ~r[i];
        return;
    }
    for (int i = 0; i < 3; i++) out[i] = crc32c(seed, p[i], n[i]);
}

// ---------------------------------------------------------------------------------------------------------------
// Little helpers

static void put_le16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put_le32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_le64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get_le32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static void put_be32(uint8_t *p, uint32_t v) {
    for (int i = 3; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}
static void put_be64(uint8_t *p, uint64_t v) {
    for (int i = 7; i >= 0; i--, v >>= 8) p[i] = (uint8_t)v;
}
static uint64_t get_be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
}
static uint32_t get_be32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v = v << 8 | p[i];
    return v;
}

static void check_sys(long rc, const char *what) {
    if (rc < 0) die("%s: %s", what, strerror(errno));
}

// Disk bytes (allocated blocks) of the files in `dir`.
static long long dir_bytes(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) die("opendir %s: %s", dir, strerror(errno));
    long long total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        if (e->d_name[0] == '.') continue;
        if (fstatat(dirfd(d), e->d_name, &st, 0) == 0 && S_ISREG(st.st_mode)) total += (long long)st.st_blocks * 512;
    }
    closedir(d);
    return total;
}

static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    rmdir(dir);
}

// Per subject: its last seq and, for the stores that need it, where each of its last KEEP messages lies (a
// segment id, or an arrival number), oldest at `ring_at`. The daemon keeps the same in memory.
struct tracking {
    int subjects;
    uint64_t *seq;
    uint64_t *ring;
    uint32_t *ring_at;
    uint64_t arrivals;
};

static void tracking_init(struct tracking *t, int subjects) {
    t->subjects = subjects;
    t->seq = xcalloc((size_t)subjects, sizeof *t->seq);
    t->ring = xcalloc((size_t)subjects * KEEP, sizeof *t->ring);
    t->ring_at = xcalloc((size_t)subjects, sizeof *t->ring_at);
    t->arrivals = 0;
}

static void tracking_free(struct tracking *t) {
    free(t->seq);
    free(t->ring);
    free(t->ring_at);
}

// Records message `seq` of subject `s` at `where`; returns 1 and the trimmed message's place when one left.
static int tracking_push(struct tracking *t, int s, uint64_t seq, uint64_t where, uint64_t *trimmed) {
    uint64_t *slot = &t->ring[(size_t)s * KEEP + t->ring_at[s]];
    int left = seq > KEEP;
    if (left) *trimmed = *slot;
    *slot = where;
    if (++t->ring_at[s] == KEEP) t->ring_at[s] = 0;
    return left;
}

// Subjects touched by a batch, each once, with the batch's last seq for it.
struct touched {
    int count;
    int subject[BATCH];
    uint32_t *stamp;
    uint32_t now;
};

static void touched_begin(struct touched *t) {
    t->count = 0;
    t->now++;
}

static void touched_add(struct touched *t, int s) {
    if (t->stamp[s] == t->now) return;
    t->stamp[s] = t->now;
    t->subject[t->count++] = s;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

// ---------------------------------------------------------------------------------------------------------------
// Store interface

struct store_ops {
    const char *name;
    void *(*open)(const char *dir, struct workload *w, enum policy policy);
    // Switch between the warm-up (everysec) and the measured policy.
    void (*set_policy)(void *s, enum policy policy);
    void (*write)(void *s, const struct batch *b);
    // Make everything written durable: the end of every measured run (counted).
    void (*sync)(void *s);
    long long (*retained)(void *s);
    void (*close)(void *s);
    // Gathers several batches per write or transaction: run under everysec only (the always writer is woken for
    // every batch and syncs it).
    int everysec_only;
};

// ---------------------------------------------------------------------------------------------------------------
// seg: the daemon's segment files (SegmentLedger, HistoryJournal, HistoryWriter, SegmentFiles, DirectWrites)

enum {
    SEGMENT_BYTES = 64 << 20,
    HEADER_BYTES = 8,
    FIXED_BODY_BYTES = 27,
    BLOCK = 4096,
    STAGING = 1 << 20,
    MAX_CMDS = 4096,
};

static int pass_batches = 10;  // the -pass stores' batches per writer pass or transaction

struct seg_cmd {
    int is_delete;
    uint32_t segment;
    size_t start, len;  // records: a span of the pass buffer
};

struct seg {
    struct workload *w;
    enum policy policy;
    int dirfd;
    char dir[4096];
    struct tracking track;
    // SegmentLedger: the current segment and retained records per segment.
    uint32_t current;
    size_t current_bytes;
    long current_live;
    long *live;
    size_t live_cap;
    // HistoryJournal: the pass's records (one buffer) and commands in order.
    uint8_t *buf;
    size_t buf_len, buf_cap;
    struct seg_cmd cmds[MAX_CMDS];
    int ncmds;
    int batches;
    int pass;  // batches per writer pass
    // HistoryWriter / SegmentFiles / DirectWrites.
    int fd;  // -1: none open
    uint32_t open_id;
    long long size;
    int direct;
    uint8_t *staging;
    long long base;
    size_t staged;
    long long offset;  // buffered writes
    int has_spare;
    int dirty;
    int64_t last_sync;
    int warned_buffered;
};

static void seg_name(char *out, uint32_t id) { snprintf(out, 32, "%08" PRIu32 ".seg", id); }

static void seg_sync(struct seg *g) {
    g->last_sync = clock_ns(CLOCK_MONOTONIC);
    if (g->dirty && g->fd >= 0) check_sys(fdatasync(g->fd), "fdatasync");
    g->dirty = 0;
}

static void seg_open_file(struct seg *g, uint32_t id) {
    char name[32];
    seg_name(name, id);
    int reused = 0;
    if (g->has_spare) {
        g->has_spare = 0;
        reused = renameat(g->dirfd, "spare", g->dirfd, name) == 0;
    }
    int fd = openat(g->dirfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
    check_sys(fd, "open segment");
    struct stat st;
    check_sys(fstat(fd, &st), "fstat");
    g->fd = fd;
    g->open_id = id;
    g->size = st.st_size;
    long long offset = reused ? 0 : st.st_size;
    if (offset % BLOCK) die("a segment to append to that ends inside a block: not modelled");
    g->base = offset;
    g->staged = 0;
    g->offset = offset;
    g->direct = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_DIRECT) == 0;
    if (!g->direct && !g->warned_buffered) {
        fprintf(stderr, "note: %s takes no O_DIRECT; segments are written through the page cache\n", g->dir);
        g->warned_buffered = 1;
    }
    check_sys(fsync(g->dirfd), "fsync directory");
}

// DirectWrites.flush: the staged bytes padded to whole blocks; the last partial block stays staged.
static void seg_flush(struct seg *g) {
    size_t padded = (g->staged + BLOCK - 1) / BLOCK * BLOCK;
    memset(g->staging + g->staged, 0, padded - g->staged);
    size_t written = 0;
    while (written < padded) {
        ssize_t n = pwrite(g->fd, g->staging + written, padded - written, g->base + (long long)written);
        if (n < 0 && errno == EINTR) continue;
        check_sys(n, "pwrite");
        written += (size_t)n;
    }
    if (g->base + (long long)padded > g->size) g->size = g->base + (long long)padded;
    size_t whole = g->staged / BLOCK * BLOCK;
    if (whole > 0) {
        memmove(g->staging, g->staging + whole, g->staged - whole);
        g->base += (long long)whole;
        g->staged -= whole;
    }
}

// SegmentFiles.append of the gathered spans (one pass's batches for the open segment).
static void seg_write_gathered(struct seg *g, const struct seg_cmd *span, int n) {
    if (n == 0) return;
    if (g->direct) {
        for (int i = 0; i < n; i++) {
            size_t done = 0;
            while (done < span[i].len) {
                size_t piece = span[i].len - done;
                if (piece > STAGING - g->staged) piece = STAGING - g->staged;
                memcpy(g->staging + g->staged, g->buf + span[i].start + done, piece);
                g->staged += piece;
                done += piece;
                if (g->staged == STAGING) seg_flush(g);
            }
        }
        if (g->staged > 0) seg_flush(g);
    } else {
        struct iovec v[MAX_CMDS];
        size_t total = 0;
        for (int i = 0; i < n; i++) {
            v[i].iov_base = g->buf + span[i].start;
            v[i].iov_len = span[i].len;
            total += span[i].len;
        }
        ssize_t wrote = pwritev(g->fd, v, n, g->offset);
        check_sys(wrote, "pwritev");
        if ((size_t)wrote != total) die("short pwritev");
        g->offset += wrote;
        if (g->offset > g->size) g->size = g->offset;
    }
}

static long long seg_written_end(const struct seg *g) { return g->direct ? g->base + (long long)g->staged : g->offset; }

static void seg_cut_to_written(struct seg *g) {
    long long end = seg_written_end(g);
    if (g->fd >= 0 && end < g->size) {
        check_sys(ftruncate(g->fd, end), "ftruncate");
        g->size = end;
    }
}

static void seg_close_file(struct seg *g) {
    if (g->fd >= 0) close(g->fd);
    g->fd = -1;
}

static void seg_remove(struct seg *g, uint32_t id) {
    char name[32];
    seg_name(name, id);
    if (!g->has_spare) {
        if (renameat(g->dirfd, name, g->dirfd, "spare") == 0) {
            g->has_spare = 1;
            return;
        }
        if (errno == ENOENT) return;
    }
    if (unlinkat(g->dirfd, name, 0) != 0 && errno != ENOENT) die("unlink segment: %s", strerror(errno));
}

// HistoryRecord.seal: every record's checksum, seeded with the segment id, three records at a time.
static void seg_seal(uint8_t *records, size_t len, uint32_t segment) {
    uint8_t id[4];
    put_le32(id, segment);
    uint32_t seed = crc32c(0, id, 4);
    size_t at = 0;
    while (at + HEADER_BYTES <= len) {
        const uint8_t *p[3];
        size_t n[3], start[3];
        int k = 0;
        while (k < 3 && at + HEADER_BYTES <= len) {
            start[k] = at;
            n[k] = get_le32(records + at);
            p[k] = records + at + HEADER_BYTES;
            at += HEADER_BYTES + n[k];
            k++;
        }
        if (k == 3) {
            uint32_t c[3];
            crc32c3(seed, p, n, c);
            for (int i = 0; i < 3; i++) put_le32(records + start[i] + 4, c[i]);
        } else {
            for (int i = 0; i < k; i++) put_le32(records + start[i] + 4, crc32c(seed, p[i], n[i]));
        }
    }
}

// SegmentLedger.roll / place / release.
static void seg_emptied(struct seg *g, uint32_t id) {
    if (g->ncmds == MAX_CMDS) die("too many commands in a pass");
    g->cmds[g->ncmds++] = (struct seg_cmd){.is_delete = 1, .segment = id};
}

static void seg_set_live(struct seg *g, uint32_t id, long v) {
    if (id >= g->live_cap) {
        size_t cap = g->live_cap * 2 > id + 1 ? g->live_cap * 2 : id + 16;
        g->live = realloc(g->live, cap * sizeof *g->live);
        if (!g->live) die("out of memory");
        for (size_t i = g->live_cap; i < cap; i++) g->live[i] = -1;
        g->live_cap = cap;
    }
    g->live[id] = v;
}

static uint32_t seg_place(struct seg *g, size_t bytes) {
    if (g->current_bytes > 0 && g->current_bytes + bytes > SEGMENT_BYTES) {
        seg_set_live(g, g->current, g->current_live);
        if (g->current_live == 0) seg_emptied(g, g->current);
        g->current_live = 0;
        g->current++;
        g->current_bytes = 0;
    }
    g->current_bytes += bytes;
    g->current_live++;
    return g->current;
}

static void seg_release(struct seg *g, uint32_t id) {
    if (id == g->current) {
        g->current_live--;
        return;
    }
    if (id >= g->live_cap || g->live[id] <= 0) die("ledger: release of a record in segment %u, which holds none", id);
    if (--g->live[id] == 0) {
        g->live[id] = -1;
        seg_emptied(g, id);
    }
}

// The writer's pass: seal, write, delete, sync (HistoryWriter.runThread).
static void seg_pass(struct seg *g) {
    int first = 0, gathered = 0;  // cmds[first, first+gathered) are records for the open segment
    int wrote = 0;
    for (int i = 0; i < g->ncmds; i++) {
        struct seg_cmd *c = &g->cmds[i];
        if (!c->is_delete) {
            if (g->fd < 0 || g->open_id != c->segment) {
                seg_write_gathered(g, g->cmds + first, gathered);
                gathered = 0;
                if (g->fd >= 0) {
                    seg_cut_to_written(g);
                    g->dirty = 1;
                    seg_sync(g);
                    seg_close_file(g);
                }
                seg_open_file(g, c->segment);
            }
            seg_seal(g->buf + c->start, c->len, c->segment);
            if (gathered == 0) first = i;
            // Spans of one segment lie one after another in the command list only when no delete comes between.
            if (first + gathered != i) {
                seg_write_gathered(g, g->cmds + first, gathered);
                first = i;
                gathered = 0;
            }
            gathered++;
            wrote = 1;
        } else {
            seg_write_gathered(g, g->cmds + first, gathered);
            gathered = 0;
            if (g->dirty) seg_sync(g);
            if (g->fd >= 0 && g->open_id == c->segment) seg_close_file(g);
            seg_remove(g, c->segment);
        }
        if (wrote && !g->dirty) g->dirty = 1;
    }
    seg_write_gathered(g, g->cmds + first, gathered);
    g->ncmds = 0;
    g->buf_len = 0;
    g->batches = 0;
    if (g->dirty) {
        if (g->policy == ALWAYS) seg_sync(g);
        else if (clock_ns(CLOCK_MONOTONIC) - g->last_sync >= 1000000000) seg_sync(g);
    }
}

static void *seg_open_pass(const char *dir, struct workload *w, enum policy policy, int pass) {
    struct seg *g = xcalloc(1, sizeof *g);
    g->pass = pass;
    g->w = w;
    g->policy = policy;
    snprintf(g->dir, sizeof g->dir, "%s", dir);
    g->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    check_sys(g->dirfd, "open directory");
    tracking_init(&g->track, w->subjects);
    g->current = 1;
    g->buf_cap = 1 << 16;
    g->buf = xcalloc(1, g->buf_cap);
    g->fd = -1;
    if (posix_memalign((void **)&g->staging, BLOCK, STAGING)) die("out of memory");
    g->last_sync = clock_ns(CLOCK_MONOTONIC);
    return g;
}

static void *seg_open(const char *dir, struct workload *w, enum policy p) { return seg_open_pass(dir, w, p, 1); }
static void *segpass_open(const char *dir, struct workload *w, enum policy p) {
    return seg_open_pass(dir, w, p, pass_batches);
}

static void seg_set_policy(void *s, enum policy policy) { ((struct seg *)s)->policy = policy; }

static void seg_write(void *s, const struct batch *b) {
    struct seg *g = s;
    struct workload *w = g->w;
    for (int i = 0; i < BATCH; i++) {
        int subject = b->subject[i];
        uint64_t seq = ++g->track.seq[subject];
        uint16_t sl = w->name_len[subject];
        size_t size = HEADER_BYTES + FIXED_BODY_BYTES + sl + PAYLOAD;
        uint32_t id = seg_place(g, size);
        // HistoryJournal.record: a new span when the segment changes (or a delete came between).
        struct seg_cmd *last = g->ncmds ? &g->cmds[g->ncmds - 1] : NULL;
        if (!last || last->is_delete || last->segment != id) {
            if (g->ncmds == MAX_CMDS) die("too many commands in a pass");
            g->cmds[g->ncmds++] = (struct seg_cmd){.segment = id, .start = g->buf_len, .len = 0};
            last = &g->cmds[g->ncmds - 1];
        }
        if (g->buf_len + size > g->buf_cap) {
            g->buf_cap *= 2;
            g->buf = realloc(g->buf, g->buf_cap);
            if (!g->buf) die("out of memory");
        }
        // HistoryRecord.writeUnsealed
        uint8_t *at = g->buf + g->buf_len;
        put_le32(at, (uint32_t)(FIXED_BODY_BYTES + sl + PAYLOAD));
        put_le32(at + 4, 0);
        at[8] = 1;
        put_le64(at + 9, seq);
        put_le64(at + 17, 1);  // numbering serial
        put_le64(at + 25, (uint64_t)b->wall_ns);
        put_le16(at + 33, sl);
        memcpy(at + 35, w->name[subject], sl);
        payload_for(w, g->track.arrivals++);
        memcpy(at + 35 + sl, w->payload, PAYLOAD);
        g->buf_len += size;
        last->len += size;
        uint64_t trimmed;
        if (tracking_push(&g->track, subject, seq, id, &trimmed)) seg_release(g, (uint32_t)trimmed);
    }
    if (++g->batches >= g->pass) seg_pass(g);
}

static void seg_sync_all(void *s) {
    struct seg *g = s;
    if (g->ncmds) seg_pass(g);
    g->dirty = 1;
    seg_sync(g);
}

// Reads the open segment back and checks every record (length, kind, checksum): not measured.
static void seg_verify(struct seg *g) {
    if (g->fd < 0) return;
    long long end = seg_written_end(g);
    if (end != (long long)g->current_bytes) die("seg: %lld bytes written where the ledger placed %zu", end, g->current_bytes);
    char name[32];
    seg_name(name, g->open_id);
    int fd = openat(g->dirfd, name, O_RDONLY | O_CLOEXEC);
    check_sys(fd, "open segment to verify");
    uint8_t *bytes = malloc((size_t)end + 1);
    if (!bytes) die("out of memory");
    if (pread(fd, bytes, (size_t)end, 0) != end) die("seg: short read of segment %u", g->open_id);
    close(fd);
    uint8_t id[4];
    put_le32(id, g->open_id);
    uint32_t seed = crc32c(0, id, 4);
    long long at = 0, records = 0;
    while (at < end) {
        uint32_t body = get_le32(bytes + at);
        if (at + HEADER_BYTES + body > end || bytes[at + 8] != 1 ||
            crc32c(seed, bytes + at + HEADER_BYTES, body) != get_le32(bytes + at + 4))
            die("seg: bad record at %lld of segment %u", at, g->open_id);
        at += HEADER_BYTES + body;
        records++;
    }
    free(bytes);
    if (records == 0) die("seg: no records in segment %u", g->open_id);
}

static long long seg_retained(void *s) {
    struct seg *g = s;
    seg_verify(g);
    long long n = g->current_live;
    for (size_t i = 0; i < g->live_cap; i++)
        if (g->live[i] > 0 && i != g->current) n += g->live[i];
    return n;
}

static void seg_close(void *s) {
    struct seg *g = s;
    seg_close_file(g);
    close(g->dirfd);
    tracking_free(&g->track);
    free(g->live);
    free(g->buf);
    free(g->staging);
    free(g);
}

static const struct store_ops seg_ops = {"seg", seg_open, seg_set_policy, seg_write, seg_sync_all, seg_retained,
                                         seg_close, 0};
// The writer as it runs under everysec, where it takes what a 10 ms nap gathered in one pass: not run under always,
// whose writer is woken for every batch.
static const struct store_ops segpass_ops = {"seg-pass", segpass_open, seg_set_policy, seg_write, seg_sync_all,
                                             seg_retained, seg_close, 1};

// ---------------------------------------------------------------------------------------------------------------
// SQLite

// WAL pages past which a commit checkpoints (SQLite's wal_autocheckpoint; 0: never); besides, a PASSIVE checkpoint
// runs once a second and at the end of each measured run, which is what syncs under synchronous=NORMAL.
static int sqlite_autocheckpoint = 1000;
static int sqlite_cache_kib = 65536;

enum sqlite_layout { PK, LOG };

struct sql {
    struct workload *w;
    enum sqlite_layout layout;
    enum policy policy;
    int pass, pending;  // batches per transaction, and in the open one
    sqlite3 *db;
    sqlite3_stmt *begin, *commit, *insert, *trim, *subject_insert, *count;
    struct tracking track;
    struct touched touched;
    uint64_t *trimmed_to;  // pk: seqs up to this are deleted
    uint64_t gone[BATCH];
    int ngone;
    char *known;
    int64_t last_sync;
};

static void sql_check(struct sql *q, int rc, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) die("sqlite %s: %s", what, sqlite3_errmsg(q->db));
}

static void sql_exec(struct sql *q, const char *sql) {
    char *err = NULL;
    if (sqlite3_exec(q->db, sql, NULL, NULL, &err) != SQLITE_OK) die("sqlite: %s: %s", sql, err);
}

static sqlite3_stmt *sql_prepare(struct sql *q, const char *sql) {
    sqlite3_stmt *st;
    sql_check(q, sqlite3_prepare_v3(q->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL), sql);
    return st;
}

static void sql_step(struct sql *q, sqlite3_stmt *st) {
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) sql_check(q, rc, sqlite3_sql(st));
    sqlite3_reset(st);
}

static void sql_set_policy(void *s, enum policy policy) {
    struct sql *q = s;
    q->policy = policy;
    sql_exec(q, policy == ALWAYS ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
}

static void *sql_open(const char *dir, struct workload *w, enum policy policy, enum sqlite_layout layout, int pass) {
    struct sql *q = xcalloc(1, sizeof *q);
    q->w = w;
    q->pass = pass;
    q->layout = layout;
    char path[4200];
    snprintf(path, sizeof path, "%s/history.db", dir);
    if (sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL))
        die("sqlite open %s", path);
    // The daemon owns its directory: exclusive locking, set before WAL, keeps the WAL index in the process's
    // memory (no -shm file, no lock calls per transaction).
    sql_exec(q, "PRAGMA page_size=4096");
    sql_exec(q, "PRAGMA locking_mode=EXCLUSIVE");
    sql_exec(q, "PRAGMA journal_mode=WAL");
    char pragma[128];
    snprintf(pragma, sizeof pragma, "PRAGMA cache_size=-%d", sqlite_cache_kib);
    sql_exec(q, pragma);
    snprintf(pragma, sizeof pragma, "PRAGMA wal_autocheckpoint=%d", sqlite_autocheckpoint);
    sql_exec(q, pragma);
    sql_set_policy(q, policy);
    sql_exec(q, "CREATE TABLE subjects(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)");
    if (layout == PK) {
        sql_exec(q, "CREATE TABLE history(subject INTEGER NOT NULL, seq INTEGER NOT NULL, ts INTEGER NOT NULL,"
                    " payload BLOB NOT NULL, PRIMARY KEY(subject, seq)) WITHOUT ROWID");
        q->insert = sql_prepare(q, "INSERT INTO history(subject, seq, ts, payload) VALUES(?1, ?2, ?3, ?4)");
        q->trim = sql_prepare(q, "DELETE FROM history WHERE subject = ?1 AND seq <= ?2");
    } else {
        sql_exec(q, "CREATE TABLE history(id INTEGER PRIMARY KEY, subject INTEGER NOT NULL, seq INTEGER NOT NULL,"
                    " ts INTEGER NOT NULL, payload BLOB NOT NULL)");
        q->insert = sql_prepare(q, "INSERT INTO history(id, subject, seq, ts, payload) VALUES(?5, ?1, ?2, ?3, ?4)");
        q->trim = sql_prepare(q, "DELETE FROM history WHERE id BETWEEN ?1 AND ?2");
    }
    q->begin = sql_prepare(q, "BEGIN");
    q->commit = sql_prepare(q, "COMMIT");
    q->subject_insert = sql_prepare(q, "INSERT INTO subjects(id, name) VALUES(?1, ?2)");
    q->count = sql_prepare(q, "SELECT count(*) FROM history");
    tracking_init(&q->track, w->subjects);
    q->touched.stamp = xcalloc((size_t)w->subjects, sizeof *q->touched.stamp);
    q->trimmed_to = xcalloc((size_t)w->subjects, sizeof *q->trimmed_to);
    q->known = xcalloc((size_t)w->subjects, 1);
    q->last_sync = clock_ns(CLOCK_MONOTONIC);
    return q;
}

static void *sqlpk_open(const char *dir, struct workload *w, enum policy p) { return sql_open(dir, w, p, PK, 1); }
static void *sqllog_open(const char *dir, struct workload *w, enum policy p) { return sql_open(dir, w, p, LOG, 1); }
static void *sqllogpass_open(const char *dir, struct workload *w, enum policy p) {
    return sql_open(dir, w, p, LOG, pass_batches);
}

static void sql_checkpoint(struct sql *q) {
    q->last_sync = clock_ns(CLOCK_MONOTONIC);
    sql_check(q, sqlite3_wal_checkpoint_v2(q->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL), "checkpoint");
}

static void sql_write(void *s, const struct batch *b) {
    struct sql *q = s;
    struct workload *w = q->w;
    if (q->pending++ == 0) sql_step(q, q->begin);
    touched_begin(&q->touched);
    q->ngone = 0;
    for (int i = 0; i < BATCH; i++) {
        int subject = b->subject[i];
        if (!q->known[subject]) {
            sqlite3_bind_int(q->subject_insert, 1, subject + 1);
            sqlite3_bind_text(q->subject_insert, 2, w->name[subject], w->name_len[subject], SQLITE_STATIC);
            sql_step(q, q->subject_insert);
            q->known[subject] = 1;
        }
        uint64_t seq = ++q->track.seq[subject];
        uint64_t arrival = ++q->track.arrivals;
        payload_for(w, arrival - 1);
        sqlite3_bind_int(q->insert, 1, subject + 1);
        sqlite3_bind_int64(q->insert, 2, (sqlite3_int64)seq);
        sqlite3_bind_int64(q->insert, 3, b->wall_ns);
        sqlite3_bind_blob(q->insert, 4, w->payload, PAYLOAD, SQLITE_STATIC);
        if (q->layout == LOG) {
            sqlite3_bind_int64(q->insert, 5, (sqlite3_int64)arrival);
            uint64_t gone;
            if (tracking_push(&q->track, subject, seq, arrival, &gone)) q->gone[q->ngone++] = gone;
        } else {
            touched_add(&q->touched, subject);
        }
        sql_step(q, q->insert);
    }
    if (q->layout == PK) {
        for (int k = 0; k < q->touched.count; k++) {
            int subject = q->touched.subject[k];
            uint64_t seq = q->track.seq[subject];
            if (seq <= KEEP || seq - KEEP <= q->trimmed_to[subject]) continue;
            q->trimmed_to[subject] = seq - KEEP;
            sqlite3_bind_int(q->trim, 1, subject + 1);
            sqlite3_bind_int64(q->trim, 2, (sqlite3_int64)(seq - KEEP));
            sql_step(q, q->trim);
        }
    } else if (q->ngone) {
        // The rows that left, as ranges of consecutive ids: one DELETE per range.
        qsort(q->gone, (size_t)q->ngone, sizeof q->gone[0], cmp_u64);
        int from = 0;
        for (int k = 1; k <= q->ngone; k++) {
            if (k < q->ngone && q->gone[k] == q->gone[k - 1] + 1) continue;
            sqlite3_bind_int64(q->trim, 1, (sqlite3_int64)q->gone[from]);
            sqlite3_bind_int64(q->trim, 2, (sqlite3_int64)q->gone[k - 1]);
            sql_step(q, q->trim);
            from = k;
        }
    }
    if (q->pending < q->pass) return;
    sql_step(q, q->commit);
    q->pending = 0;
    if (clock_ns(CLOCK_MONOTONIC) - q->last_sync >= 1000000000) sql_checkpoint(q);
}

static void sql_sync(void *s) {
    struct sql *q = s;
    if (q->pending) sql_step(q, q->commit);
    q->pending = 0;
    sql_checkpoint(q);
}

static long long sql_retained(void *s) {
    struct sql *q = s;
    long long n = -1;
    if (sqlite3_step(q->count) == SQLITE_ROW) n = sqlite3_column_int64(q->count, 0);
    sqlite3_reset(q->count);
    return n;
}

static void sql_close(void *s) {
    struct sql *q = s;
    sqlite3_stmt *all[] = {q->begin, q->commit, q->insert, q->trim, q->subject_insert, q->count};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sqlite3_finalize(all[i]);
    if (sqlite3_close(q->db) != SQLITE_OK) die("sqlite close");
    tracking_free(&q->track);
    free(q->touched.stamp);
    free(q->trimmed_to);
    free(q->known);
    free(q);
}

static const struct store_ops sqlpk_ops = {"sqlite-pk", sqlpk_open, sql_set_policy, sql_write, sql_sync, sql_retained,
                                           sql_close, 0};
static const struct store_ops sqllog_ops = {"sqlite-log", sqllog_open, sql_set_policy, sql_write, sql_sync,
                                            sql_retained, sql_close, 0};
static const struct store_ops sqllogpass_ops = {"sqlite-log-pass", sqllogpass_open, sql_set_policy, sql_write,
                                                sql_sync, sql_retained, sql_close, 1};

// ---------------------------------------------------------------------------------------------------------------
// LMDB

struct lm {
    struct workload *w;
    enum sqlite_layout layout;  // PK: key (subject, seq); LOG: key arrival number
    int writemap;
    int pass, pending;  // batches per transaction, and in the open one
    MDB_txn *txn;
    enum policy policy;
    MDB_env *env;
    MDB_dbi history, subjects;
    struct tracking track;
    struct touched touched;
    uint64_t *trimmed_to;
    uint64_t gone[BATCH];
    int ngone;
    char *known;
    int64_t last_sync;
};

static void lm_check(int rc, const char *what) {
    if (rc != MDB_SUCCESS) die("lmdb %s: %s", what, mdb_strerror(rc));
}

static void lm_set_policy(void *s, enum policy policy) {
    struct lm *l = s;
    l->policy = policy;
    lm_check(mdb_env_set_flags(l->env, MDB_NOSYNC, policy == EVERYSEC), "set_flags");
}

static void *lm_open(const char *dir, struct workload *w, enum policy policy, enum sqlite_layout layout,
                     int writemap, int pass) {
    struct lm *l = xcalloc(1, sizeof *l);
    l->pass = pass;
    l->w = w;
    l->layout = layout;
    l->writemap = writemap;
    lm_check(mdb_env_create(&l->env), "env_create");
    lm_check(mdb_env_set_mapsize(l->env, (size_t)16 << 30), "set_mapsize");
    lm_check(mdb_env_set_maxdbs(l->env, 2), "set_maxdbs");
    unsigned flags = MDB_NOSYNC | (writemap ? MDB_WRITEMAP : 0);
    lm_check(mdb_env_open(l->env, dir, flags, 0640), "env_open");
    MDB_txn *txn;
    lm_check(mdb_txn_begin(l->env, NULL, 0, &txn), "txn_begin");
    lm_check(mdb_dbi_open(txn, "history", MDB_CREATE, &l->history), "dbi_open");
    lm_check(mdb_dbi_open(txn, "subjects", MDB_CREATE, &l->subjects), "dbi_open");
    lm_check(mdb_txn_commit(txn), "commit");
    lm_set_policy(l, policy);
    tracking_init(&l->track, w->subjects);
    l->touched.stamp = xcalloc((size_t)w->subjects, sizeof *l->touched.stamp);
    l->trimmed_to = xcalloc((size_t)w->subjects, sizeof *l->trimmed_to);
    l->known = xcalloc((size_t)w->subjects, 1);
    l->last_sync = clock_ns(CLOCK_MONOTONIC);
    return l;
}

static void *lmpk_open(const char *dir, struct workload *w, enum policy p) { return lm_open(dir, w, p, PK, 0, 1); }
static void *lmwm_open(const char *dir, struct workload *w, enum policy p) { return lm_open(dir, w, p, PK, 1, 1); }
static void *lmlog_open(const char *dir, struct workload *w, enum policy p) { return lm_open(dir, w, p, LOG, 0, 1); }
static void *lmpass_open(const char *dir, struct workload *w, enum policy p) {
    return lm_open(dir, w, p, PK, 0, pass_batches);
}

static void lm_write(void *s, const struct batch *b) {
    struct lm *l = s;
    struct workload *w = l->w;
    if (l->pending++ == 0) lm_check(mdb_txn_begin(l->env, NULL, 0, &l->txn), "txn_begin");
    MDB_txn *txn = l->txn;
    touched_begin(&l->touched);
    l->ngone = 0;
    uint8_t kbuf[12], vbuf[12 + 8 + PAYLOAD];
    for (int i = 0; i < BATCH; i++) {
        int subject = b->subject[i];
        if (!l->known[subject]) {
            uint8_t id[4];
            put_be32(id, (uint32_t)subject + 1);
            MDB_val k = {4, id}, v = {w->name_len[subject], w->name[subject]};
            lm_check(mdb_put(txn, l->subjects, &k, &v, 0), "put subject");
            l->known[subject] = 1;
        }
        uint64_t seq = ++l->track.seq[subject];
        uint64_t arrival = ++l->track.arrivals;
        payload_for(w, arrival - 1);
        MDB_val k, v;
        if (l->layout == PK) {
            put_be32(kbuf, (uint32_t)subject + 1);
            put_be64(kbuf + 4, seq);
            k = (MDB_val){12, kbuf};
            put_le64(vbuf, (uint64_t)b->wall_ns);
            memcpy(vbuf + 8, w->payload, PAYLOAD);
            v = (MDB_val){8 + PAYLOAD, vbuf};
            touched_add(&l->touched, subject);
            lm_check(mdb_put(txn, l->history, &k, &v, 0), "put");
        } else {
            put_be64(kbuf, arrival);
            k = (MDB_val){8, kbuf};
            put_le32(vbuf, (uint32_t)subject + 1);
            put_le64(vbuf + 4, seq);
            put_le64(vbuf + 12, (uint64_t)b->wall_ns);
            memcpy(vbuf + 20, w->payload, PAYLOAD);
            v = (MDB_val){20 + PAYLOAD, vbuf};
            uint64_t gone;
            if (tracking_push(&l->track, subject, seq, arrival, &gone)) l->gone[l->ngone++] = gone;
            lm_check(mdb_put(txn, l->history, &k, &v, MDB_APPEND), "put append");
        }
    }
    MDB_cursor *cur;
    lm_check(mdb_cursor_open(txn, l->history, &cur), "cursor_open");
    if (l->layout == PK) {
        for (int t = 0; t < l->touched.count; t++) {
            int subject = l->touched.subject[t];
            uint64_t seq = l->track.seq[subject];
            if (seq <= KEEP || seq - KEEP <= l->trimmed_to[subject]) continue;
            uint64_t cutoff = seq - KEEP;
            put_be32(kbuf, (uint32_t)subject + 1);
            put_be64(kbuf + 4, l->trimmed_to[subject] + 1);
            MDB_val k = {12, kbuf}, v;
            int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
            while (rc == MDB_SUCCESS && k.mv_size == 12 && get_be32(k.mv_data) == (uint32_t)subject + 1 &&
                   get_be64((const uint8_t *)k.mv_data + 4) <= cutoff) {
                lm_check(mdb_cursor_del(cur, 0), "cursor_del");
                rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
            }
            if (rc != MDB_SUCCESS && rc != MDB_NOTFOUND) lm_check(rc, "cursor_get");
            l->trimmed_to[subject] = cutoff;
        }
    } else if (l->ngone) {
        qsort(l->gone, (size_t)l->ngone, sizeof l->gone[0], cmp_u64);
        int from = 0;
        for (int g = 1; g <= l->ngone; g++) {
            if (g < l->ngone && l->gone[g] == l->gone[g - 1] + 1) continue;
            put_be64(kbuf, l->gone[from]);
            MDB_val k = {8, kbuf}, v;
            int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY);
            for (uint64_t id = l->gone[from]; id <= l->gone[g - 1]; id++) {
                lm_check(rc, "cursor_get");
                if (get_be64(k.mv_data) != id) die("lmdb-log: row %" PRIu64 " missing", id);
                lm_check(mdb_cursor_del(cur, 0), "cursor_del");
                if (id < l->gone[g - 1]) rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
            }
            from = g;
        }
    }
    mdb_cursor_close(cur);
    if (l->pending < l->pass) return;
    lm_check(mdb_txn_commit(txn), "commit");
    l->pending = 0;
    if (l->policy == EVERYSEC && clock_ns(CLOCK_MONOTONIC) - l->last_sync >= 1000000000) {
        l->last_sync = clock_ns(CLOCK_MONOTONIC);
        lm_check(mdb_env_sync(l->env, 1), "env_sync");
    }
}

static void lm_sync(void *s) {
    struct lm *l = s;
    if (l->pending) lm_check(mdb_txn_commit(l->txn), "commit");
    l->pending = 0;
    l->last_sync = clock_ns(CLOCK_MONOTONIC);
    lm_check(mdb_env_sync(l->env, 1), "env_sync");
}

static long long lm_retained(void *s) {
    struct lm *l = s;
    MDB_txn *txn;
    MDB_stat st;
    lm_check(mdb_txn_begin(l->env, NULL, MDB_RDONLY, &txn), "txn_begin");
    lm_check(mdb_stat(txn, l->history, &st), "stat");
    mdb_txn_abort(txn);
    return (long long)st.ms_entries;
}

static void lm_close(void *s) {
    struct lm *l = s;
    mdb_env_close(l->env);
    tracking_free(&l->track);
    free(l->touched.stamp);
    free(l->trimmed_to);
    free(l->known);
    free(l);
}

static const struct store_ops lmpk_ops = {"lmdb", lmpk_open, lm_set_policy, lm_write, lm_sync, lm_retained, lm_close, 0};
// MDB_WRITEMAP: pages are written in the map, no pwrite; mdb_env_sync is an msync. LMDB's documentation warns that
// with MDB_NOSYNC (everysec here) a system crash can then corrupt the database, not only lose the last transactions.
static const struct store_ops lmwm_ops = {"lmdb-wm", lmwm_open, lm_set_policy, lm_write, lm_sync, lm_retained, lm_close, 0};
static const struct store_ops lmlog_ops = {"lmdb-log", lmlog_open, lm_set_policy, lm_write, lm_sync, lm_retained,
                                           lm_close, 0};

static const struct store_ops lmpass_ops = {"lmdb-pass", lmpass_open, lm_set_policy, lm_write, lm_sync, lm_retained,
                                            lm_close, 1};

static const struct store_ops *const all_stores[] = {&seg_ops,  &segpass_ops, &sqlpk_ops, &sqllog_ops, &sqllogpass_ops,
                                                     &lmpk_ops, &lmwm_ops,    &lmlog_ops, &lmpass_ops};
enum { NSTORES_ALL = sizeof all_stores / sizeof all_stores[0] };

// ---------------------------------------------------------------------------------------------------------------
// Driver

struct sample {
    double wall_s, user_s, sys_s;
};

static double tv_s(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

// Writes `messages` (a multiple of BATCH) into store `s`, round robin over the subjects from `*next`.
static struct sample run(const struct store_ops *ops, void *s, struct workload *w, long long messages,
                         long long *next, int do_sync) {
    struct rusage r0, r1;
    struct batch b;
    getrusage(RUSAGE_SELF, &r0);
    int64_t t0 = clock_ns(CLOCK_MONOTONIC);
    for (long long m = 0; m < messages; m += BATCH) {
        for (int i = 0; i < BATCH; i++) b.subject[i] = (int)((*next)++ % w->subjects);
        b.wall_ns = clock_ns(CLOCK_REALTIME);
        ops->write(s, &b);
    }
    if (do_sync) ops->sync(s);
    int64_t t1 = clock_ns(CLOCK_MONOTONIC);
    getrusage(RUSAGE_SELF, &r1);
    return (struct sample){(double)(t1 - t0) / 1e9, tv_s(r1.ru_utime) - tv_s(r0.ru_utime),
                           tv_s(r1.ru_stime) - tv_s(r0.ru_stime)};
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    double *c = xcalloc((size_t)n, sizeof *c);
    memcpy(c, v, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, cmp_double);
    double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    free(c);
    return m;
}

static void usage(void) {
    printf("usage: storage_bench [options]\n"
           "  --messages N         messages per measured run, everysec (default 2000000)\n"
           "  --always-messages N  messages per measured run, always (default 300000)\n"
           "  --warmup N           messages written before measuring, per store and case (default: enough\n"
           "                       for every store to trim and the segments to be reused: subjects*1000 +\n"
           "                       2.5 segments' worth)\n"
           "  --reps R             measured runs per store and case, in rotating order (default 5)\n"
           "  --dir PATH           where the stores' directories go (default /var/tmp/fanout-storage-bench)\n"
           "  --stores LIST        comma-separated, of seg, seg-pass, sqlite-pk, sqlite-log, sqlite-log-pass,\n"
           "                       lmdb, lmdb-pass, lmdb-wm, lmdb-log (default: all but sqlite-pk); the\n"
           "                       ratios are against the first (seg); the -pass ones run under everysec only\n"
           "  --subjects LIST      comma-separated subject counts (default 1,1000)\n"
           "  --policies LIST      comma-separated, of everysec,always (default everysec,always)\n"
           "  --pass-batches K     batches per writer pass (seg-pass: one pwrite) or per transaction\n"
           "                       (sqlite-log-pass, lmdb-pass) (default 10)\n"
           "  --sqlite-autocheckpoint P  WAL pages past which a commit checkpoints, besides the checkpoint\n"
           "                       once a second (default 1000, SQLite's own; 0: only that one)\n"
           "  --sqlite-cache-kib K SQLite page cache (default 65536)\n"
           "  --verbose            print every run\n");
}

int main(int argc, char **argv) {
    long long messages = 2000000, always_messages = 300000, warmup = -1;
    int reps = 5, verbose = 0;
    const char *base = "/var/tmp/fanout-storage-bench";
    char stores_arg[256] = "seg,seg-pass,sqlite-log,sqlite-log-pass,lmdb,lmdb-pass,lmdb-wm,lmdb-log";
    char subjects_arg[256] = "1,1000";
    char policies_arg[256] = "everysec,always";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            return 0;
        } else if (!strcmp(a, "--verbose")) {
            verbose = 1;
        } else if (!v) {
            usage();
            die("%s takes a value", a);
        } else if (!strcmp(a, "--messages")) {
            messages = atoll(v), i++;
        } else if (!strcmp(a, "--always-messages")) {
            always_messages = atoll(v), i++;
        } else if (!strcmp(a, "--warmup")) {
            warmup = atoll(v), i++;
        } else if (!strcmp(a, "--reps")) {
            reps = atoi(v), i++;
        } else if (!strcmp(a, "--dir")) {
            base = v, i++;
        } else if (!strcmp(a, "--stores")) {
            snprintf(stores_arg, sizeof stores_arg, "%s", v), i++;
        } else if (!strcmp(a, "--subjects")) {
            snprintf(subjects_arg, sizeof subjects_arg, "%s", v), i++;
        } else if (!strcmp(a, "--policies")) {
            snprintf(policies_arg, sizeof policies_arg, "%s", v), i++;
        } else if (!strcmp(a, "--pass-batches")) {
            pass_batches = atoi(v), i++;
        } else if (!strcmp(a, "--sqlite-autocheckpoint")) {
            sqlite_autocheckpoint = atoi(v), i++;
        } else if (!strcmp(a, "--sqlite-cache-kib")) {
            sqlite_cache_kib = atoi(v), i++;
        } else {
            usage();
            die("unknown option %s", a);
        }
    }
    if (reps < 1 || messages < BATCH || always_messages < BATCH || pass_batches < 1) die("bad option value");
    messages = messages / BATCH * BATCH;
    always_messages = always_messages / BATCH * BATCH;

    const struct store_ops *stores[NSTORES_ALL];
    int nstores = 0;
    for (char *tok = strtok(stores_arg, ","); tok; tok = strtok(NULL, ",")) {
        int found = 0;
        for (int k = 0; k < NSTORES_ALL; k++)
            if (!strcmp(tok, all_stores[k]->name)) stores[nstores++] = all_stores[k], found = 1;
        if (!found || nstores > NSTORES_ALL) die("unknown store %s", tok);
    }
    int subject_counts[16], nsubjects = 0;
    for (char *tok = strtok(subjects_arg, ","); tok && nsubjects < 16; tok = strtok(NULL, ","))
        if ((subject_counts[nsubjects++] = atoi(tok)) < 1) die("bad subject count %s", tok);
    enum policy policies[2];
    int npolicies = 0;
    for (char *tok = strtok(policies_arg, ","); tok && npolicies < 2; tok = strtok(NULL, ",")) {
        if (!strcmp(tok, "everysec")) policies[npolicies++] = EVERYSEC;
        else if (!strcmp(tok, "always")) policies[npolicies++] = ALWAYS;
        else die("unknown policy %s", tok);
    }

    crc_init();
    if (crc32c(0, "123456789", 9) != 0xE3069283u) die("CRC-32C check value is wrong");
    if (mkdir(base, 0755) != 0 && errno != EEXIST) die("mkdir %s: %s", base, strerror(errno));

    time_t now = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M", localtime(&now));
    printf("# storage_bench %s  dir=%s  sqlite %s  %s  crc32c=%s\n", date, base, sqlite3_libversion(),
           mdb_version(NULL, NULL, NULL), crc_hw ? "sse4.2" : "table");
    printf("# batch %d msgs, payload %d B, keep %d per subject, reps %d, seg-pass %d batches per pass,"
           " sqlite checkpoint 1/s + wal_autocheckpoint=%d, sqlite cache %d KiB\n",
           BATCH, PAYLOAD, KEEP, reps, pass_batches, sqlite_autocheckpoint, sqlite_cache_kib);
    fflush(stdout);

    for (int si = 0; si < nsubjects; si++) {
        int subjects = subject_counts[si];
        struct workload w = {.subjects = subjects};
        w.name = xcalloc((size_t)subjects, sizeof *w.name);
        w.name_len = xcalloc((size_t)subjects, sizeof *w.name_len);
        for (int s = 0; s < subjects; s++) {
            char n[32];
            int len = snprintf(n, sizeof n, "bench.%d", s);
            w.name[s] = strdup(n);
            w.name_len[s] = (uint16_t)len;
        }
        for (int i = 0; i < PAYLOAD; i++) w.payload[i] = (uint8_t)('a' + i % 26);
        size_t record = HEADER_BYTES + FIXED_BODY_BYTES + strlen(w.name[subjects - 1]) + PAYLOAD;
        long long warm = warmup >= 0 ? warmup
                                     : (long long)subjects * KEEP + (long long)(2.5 * SEGMENT_BYTES / (double)record);
        warm = (warm + BATCH - 1) / BATCH * BATCH;

        for (int pi = 0; pi < npolicies; pi++) {
            enum policy policy = policies[pi];
            long long n = policy == ALWAYS ? always_messages : messages;
            const struct store_ops *cs[NSTORES_ALL];
            int ncs = 0;
            for (int k = 0; k < nstores; k++)
                if (!(policy == ALWAYS && stores[k]->everysec_only)) cs[ncs++] = stores[k];
            void *handle[NSTORES_ALL];
            char dirs[NSTORES_ALL][4096];
            long long next[NSTORES_ALL];
            struct sample samples[NSTORES_ALL][64];
            double ratio[NSTORES_ALL][64];
            if (reps > 64) die("at most 64 reps");
            fprintf(stderr, "%d subject(s), %s: warm-up %lld messages per store...\n", subjects, policy_names[policy],
                    warm);
            for (int k = 0; k < ncs; k++) {
                snprintf(dirs[k], sizeof dirs[k], "%s/%s-%d-%s", base, cs[k]->name, subjects, policy_names[policy]);
                remove_tree(dirs[k]);
                if (mkdir(dirs[k], 0755) != 0) die("mkdir %s: %s", dirs[k], strerror(errno));
                // Warm-up: everysec whatever the case, then the case's policy; not measured.
                handle[k] = cs[k]->open(dirs[k], &w, EVERYSEC);
                next[k] = 0;
                run(cs[k], handle[k], &w, warm, &next[k], 1);
                cs[k]->set_policy(handle[k], policy);
            }
            for (int r = 0; r < reps; r++) {
                for (int j = 0; j < ncs; j++) {
                    int k = (r + j) % ncs;
                    samples[k][r] = run(cs[k], handle[k], &w, n, &next[k], 1);
                    if (verbose)
                        fprintf(stderr, "  rep %d %-10s wall %.3f s user %.3f s sys %.3f s\n", r + 1, cs[k]->name,
                                samples[k][r].wall_s, samples[k][r].user_s, samples[k][r].sys_s);
                }
                for (int k = 0; k < ncs; k++)
                    ratio[k][r] = (samples[k][r].user_s + samples[k][r].sys_s) / (samples[0][r].user_s + samples[0][r].sys_s);
            }
            printf("\n## %d subject%s, %s: %lld messages per run, median of %d (warm-up %lld)\n\n", subjects,
                   subjects == 1 ? "" : "s", policy_names[policy], n, reps, warm);
            printf("| store | msgs/s | CPU s (user+sys) | user s | sys s | CPU ns/msg | CPU vs seg (same-rep) | disk B/retained msg |\n");
            printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
            for (int k = 0; k < ncs; k++) {
                double rate[64], cpu[64], user[64], sys[64];
                for (int r = 0; r < reps; r++) {
                    rate[r] = (double)n / samples[k][r].wall_s;
                    cpu[r] = samples[k][r].user_s + samples[k][r].sys_s;
                    user[r] = samples[k][r].user_s;
                    sys[r] = samples[k][r].sys_s;
                }
                long long retained = cs[k]->retained(handle[k]);
                long long expected = (long long)subjects * KEEP;
                if (next[k] < expected) expected = next[k];
                if (retained != expected)
                    die("%s keeps %lld messages where %lld were expected", cs[k]->name, retained, expected);
                long long bytes = dir_bytes(dirs[k]);
                double c = median(cpu, reps);
                printf("| %s | %.0f | %.3f | %.3f | %.3f | %.0f | %.2f | %.0f |\n", cs[k]->name, median(rate, reps), c,
                       median(user, reps), median(sys, reps), c / (double)n * 1e9, median(ratio[k], reps),
                       (double)bytes / (double)retained);
                cs[k]->close(handle[k]);
                remove_tree(dirs[k]);
            }
            fflush(stdout);
        }
        for (int s = 0; s < subjects; s++) free(w.name[s]);
        free(w.name);
        free(w.name_len);
    }
    rmdir(base);
    return 0;
}
