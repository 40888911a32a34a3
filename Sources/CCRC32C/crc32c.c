#include "crc32c.h"

#include <string.h>

#if defined(__x86_64__)

int fanout_crc32c_hardware(void) {
    return __builtin_cpu_supports("sse4.2");
}

__attribute__((target("sse4.2")))
uint32_t fanout_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    const uint8_t *next = bytes;
    uint64_t wide = crc;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, next, 8);
        wide = __builtin_ia32_crc32di(wide, word);
        next += 8;
        count -= 8;
    }
    uint32_t narrow = (uint32_t)wide;
    while (count > 0) {
        narrow = __builtin_ia32_crc32qi(narrow, *next);
        next += 1;
        count -= 1;
    }
    return narrow;
}

__attribute__((target("sse4.2")))
void fanout_crc32c_update3(uint32_t crc[3], const void *const bytes[3], const size_t count[3]) {
    const uint8_t *a = bytes[0], *b = bytes[1], *c = bytes[2];
    size_t common = count[0];
    if (count[1] < common) common = count[1];
    if (count[2] < common) common = count[2];
    common &= ~(size_t)7;
    uint64_t x = crc[0], y = crc[1], z = crc[2];
    for (size_t offset = 0; offset < common; offset += 8) {
        uint64_t wa, wb, wc;
        memcpy(&wa, a + offset, 8);
        memcpy(&wb, b + offset, 8);
        memcpy(&wc, c + offset, 8);
        x = __builtin_ia32_crc32di(x, wa);
        y = __builtin_ia32_crc32di(y, wb);
        z = __builtin_ia32_crc32di(z, wc);
    }
    crc[0] = fanout_crc32c_update((uint32_t)x, a + common, count[0] - common);
    crc[1] = fanout_crc32c_update((uint32_t)y, b + common, count[1] - common);
    crc[2] = fanout_crc32c_update((uint32_t)z, c + common, count[2] - common);
}

#else

int fanout_crc32c_hardware(void) {
    return 0;
}

uint32_t fanout_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return crc;
}

void fanout_crc32c_update3(uint32_t crc[3], const void *const bytes[3], const size_t count[3]) {
    (void)crc;
    (void)bytes;
    (void)count;
}

#endif
