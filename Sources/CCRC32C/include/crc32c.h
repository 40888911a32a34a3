// CRC-32C with the processor's own instruction (SSE 4.2's crc32), for history records: the one thing here
// Swift cannot say. FanoutHistoryDisk's CRC32C uses it when `fanout_crc32c_hardware()` says the processor
// has it, and its own tables otherwise; both give the same checksums.
#ifndef FANOUT_CRC32C_H
#define FANOUT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/// Whether `fanout_crc32c_update` runs on this processor.
int fanout_crc32c_hardware(void);

/// Continues the raw CRC-32C register `crc` over `count` bytes (no pre- or post-inversion).
uint32_t fanout_crc32c_update(uint32_t crc, const void *bytes, size_t count);

/// `fanout_crc32c_update` of three buffers at once, each with its own register in `crc`. The instruction
/// takes three cycles to give its result and can start one each cycle: one buffer's chain waits, three
/// interleaved keep it busy. History records are short, so a segment's records are sealed three at a time.
void fanout_crc32c_update3(uint32_t crc[3], const void *const bytes[3], const size_t count[3]);

#endif
