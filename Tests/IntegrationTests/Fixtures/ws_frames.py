"""The one writer of a client's WebSocket frame for the fixtures (RFC 6455 section 5.2: a client masks every
frame), so that each check frames its bytes the same way."""
import os
import struct


def masked(opcode, payload, fin=True, mask=None):
    """A masked frame of `payload`, with a random mask unless one is given (a fixed mask lets equal frames be
    built once and shared)."""
    mask = mask if mask is not None else os.urandom(4)
    head = bytes([(0x80 if fin else 0) | opcode])
    if len(payload) < 126:
        head += bytes([0x80 | len(payload)])
    elif len(payload) < 65536:
        head += bytes([0x80 | 126]) + struct.pack("!H", len(payload))
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", len(payload))
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
