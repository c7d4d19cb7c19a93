// IDX files (the MNIST container format), gzip-compressed or plain.
// Layout: magic = 0x00 0x00 <type> <ndims>, then ndims big-endian uint32 dimensions, then the
// data in row-major order. dbs reads type 0x08 (unsigned byte) only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dbs::data {

struct IdxArray {
  std::vector<std::uint32_t> dims;   // e.g. {60000, 28, 28}
  std::vector<std::uint8_t> values;  // product(dims) bytes
};

// Reads and validates the whole file. Gzip is detected by its magic bytes (1f 8b), not the name.
// Throws InputError whose message starts with the path and says what is wrong: bad magic, wrong
// data type, wrong number of dimensions (when expected_ndims > 0), a zero dimension, truncation
// (with the byte offset, in the decompressed stream, where data ran out), trailing bytes, or
// gzip corruption.
IdxArray read_idx(const std::string& path, int expected_ndims = 0);

}  // namespace dbs::data
