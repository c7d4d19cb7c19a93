"""Prints "max_abs_diff max_abs_param" of two dbs weights files (lib/nn/weights_io.cpp)."""
import struct
import sys


def params(path):
    b = open(path, "rb").read()
    assert b[:6] == b"DBSWGT", path
    pos = 12
    n, = struct.unpack_from("<I", b, pos)
    pos += 4 + n + 12
    layers, = struct.unpack_from("<I", b, pos)
    pos += 4
    for _ in range(layers):
        n, = struct.unpack_from("<I", b, pos)
        pos += 4 + n + 8
    total, = struct.unpack_from("<Q", b, pos)
    pos += 8
    return struct.unpack_from("<%df" % total, b, pos)


a, b = params(sys.argv[1]), params(sys.argv[2])
assert len(a) == len(b), (len(a), len(b))
print(max(abs(x - y) for x, y in zip(a, b)), max(abs(x) for x in a))
