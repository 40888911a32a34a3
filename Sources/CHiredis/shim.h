#ifndef FANOUT_CHIREDIS_SHIM_H
#define FANOUT_CHIREDIS_SHIM_H

// Only headers. <sys/types.h> first, for the same reason as in CLibevent's shim: event2's config header
// defines _GNU_SOURCE, which must not come before glibc's headers are first read.
#include <sys/types.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
// hiredis's own libevent adapter: attaches an async context to an event_base (fanoutd's loop).
#include <hiredis/adapters/libevent.h>

#endif
