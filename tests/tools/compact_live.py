#!/usr/bin/env python3
"""compact_live.py LIVE OUT — rewrite a live file (trace/gs_live.h) with only
what it uses: the string log cut to strlog_used, the slots to slots_used. A
collector's live file is sparse and lays out room for 512 threads and 64 MiB
of strings; this makes one small enough to commit as test data
(tests/data/v1.2/). The reader accepts any layout whose offsets fit the
file."""
import struct
import sys

HEADER = 4096


def main(src, dst):
    with open(src, "rb") as f:
        data = f.read(HEADER)
        (slots, slot_bytes, slots_off, strlog_off, strlog_cap, slots_used, _every,
         strlog_used) = struct.unpack_from("<IQQQQIIQ", data, 36)
        f.seek(strlog_off)
        log = f.read(strlog_used)
        f.seek(slots_off)
        rings = f.read(slots_used * slot_bytes)
    cap = (strlog_used + 7) & ~7
    new_slots_off = strlog_off + cap
    hdr = bytearray(data)
    struct.pack_into("<IQQQQ", hdr, 36, slots_used, slot_bytes, new_slots_off, strlog_off, cap)
    with open(dst, "wb") as f:
        f.write(hdr)
        f.write(log + b"\0" * (cap - len(log)))
        f.write(rings)


if __name__ == "__main__":
    main(*sys.argv[1:])
