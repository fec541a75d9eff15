"""Writes a damaged copy of an mp artifact for the error tests:
damage.py IN OUT byte N       flips byte N (the checksum no longer matches)
damage.py IN OUT version V    sets the trailer's format version to V
damage.py IN OUT sizes 0      makes the trailer's sizes disagree with the file
damage.py IN OUT metadata K   rewrites metadata field K (batch: 0; features:
                              adds a CPU feature no host has) with a valid
                              checksum, so only the metadata checks see it
The trailer (lib/Session/Artifact.cpp): u64 object size, u64 metadata
size, u64 CRC-32 (zlib's) of the object and metadata, u32 version, u32 0, 8-byte magic."""

import json
import struct
import sys
import zlib

src, dst, what, arg = sys.argv[1:5]
data = bytearray(open(src, "rb").read())
TRAILER = 40
obj, meta, checksum, version, _ = struct.unpack_from("<QQQII", data, len(data) - TRAILER)
if what == "byte":
    data[int(arg)] ^= 0xFF
elif what == "version":
    struct.pack_into("<I", data, len(data) - TRAILER + 24, int(arg))
elif what == "sizes":
    struct.pack_into("<Q", data, len(data) - TRAILER, obj + 1)
elif what == "metadata":
    record = json.loads(bytes(data[obj:obj + meta]))
    if arg == "batch":
        record["batch"] = 0
    else:
        record["target"]["features"] += ",+mp-no-such-feature"
    text = json.dumps(record).encode()
    payload = data[:obj] + text
    data = payload + struct.pack("<QQQII", obj, len(text), zlib.crc32(payload), version, 0) + \
        data[len(data) - 8:]
open(dst, "wb").write(bytes(data))
