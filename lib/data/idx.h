// IDX files (the MNIST container format), gzip-compressed or plain.
// Layout: magic = 0x00 0x00 <type> <ndims>, then ndims big-endian uint32 dimensions, then the
// data in row-major order. dbs reads type 0x08 (unsigned byte) only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dbs::data {

struct IdxArray {
  std::vector<std::uint32_t> dims;   // as the header declares them, e.g. {60000, 28, 28}
  std::size_t items = 0;             // items read along dims[0]: dims[0], or fewer when limited
  std::vector<std::uint8_t> values;  // items * product(dims[1..]) bytes
};

// Reads and validates the file. Gzip is detected by its magic bytes (1f 8b), not the name.
// With max_items > 0 only the first min(max_items, dims[0]) items are read and the rest of the
// file is neither read nor checked (a training run on the first N samples does not inflate and
// convert the whole set); with 0 the whole file is read and its length checked.
// Throws InputError whose message starts with the path and says what is wrong: bad magic, wrong
// data type, wrong number of dimensions (when expected_ndims > 0), a zero dimension, truncation
// (with the byte offset, in the decompressed stream, where data ran out), trailing bytes, or
// gzip corruption.
IdxArray read_idx(const std::string& path, int expected_ndims = 0, std::size_t max_items = 0);

}  // namespace dbs::data
