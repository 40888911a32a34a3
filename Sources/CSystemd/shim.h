#ifndef FANOUT_CSYSTEMD_SHIM_H
#define FANOUT_CSYSTEMD_SHIM_H

#include <sys/types.h>
#include <systemd/sd-daemon.h>

#endif
