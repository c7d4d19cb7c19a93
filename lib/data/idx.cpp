// IDX reader. The file is streamed through zlib's gz* interface, which inflates gzip members and
// passes other files through unchanged, so "offset" below always means a byte position in the
// decompressed stream (equal to the file position for plain files).
#include "lib/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "lib/common/error.h"

namespace dbs::data {
namespace {

constexpr std::uint8_t kTypeUnsignedByte = 0x08;
constexpr int kMaxDims = 4;
constexpr std::size_t kMagicBytes = 4;
constexpr std::size_t kDimBytes = 4;                       // each dimension is a big-endian uint32
constexpr std::size_t kChunkBytes = std::size_t{1} << 24;  // one gzread call; fits in an int

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzHandle = std::unique_ptr<gzFile_s, GzCloser>;

class IdxStream {
 public:
  explicit IdxStream(const std::string& path) : path_(path) {
    errno = 0;
    file_.reset(gzopen(path.c_str(), "rb"));
    if (!file_) {
      const int err = errno;
      fail(std::string("cannot open: ") + (err != 0 ? std::strerror(err) : "gzopen failed"));
    }
    gzbuffer(file_.get(), 1U << 20);
  }

  std::size_t offset() const { return offset_; }

  [[noreturn]] void fail(const std::string& what) const { throw InputError(path_ + ": " + what); }

  // Reads up to n bytes into out; returns how many arrived (fewer only at the end of the stream).
  // Throws on a gzip error, or, when the gzip stream itself ends early, reports it through
  // gzip_note() so the caller's truncation message can mention it.
  std::size_t read(std::uint8_t* out, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      const auto want = static_cast<unsigned>(std::min(n - got, kChunkBytes));
      const int r = gzread(file_.get(), out + got, want);
      if (r < 0) throw_gzip_error();
      got += static_cast<std::size_t>(r);
      offset_ += static_cast<std::size_t>(r);
      if (static_cast<unsigned>(r) < want) {
        check_gzip_error();
        break;
      }
    }
    return got;
  }

  // " (gzip: <text>)" when the gzip stream ended before its trailer, else "".
  std::string gzip_note() const {
    int errnum = Z_OK;
    gzerror(file_.get(), &errnum);
    return errnum == Z_BUF_ERROR ? " (gzip: " + gz_message() + ")" : std::string();
  }

  // Drains the rest of the stream; returns the number of bytes left in it.
  std::size_t count_remaining() {
    std::vector<std::uint8_t> sink(1U << 16);
    std::size_t extra = 0;
    for (;;) {
      const std::size_t r = read(sink.data(), sink.size());
      extra += r;
      if (r < sink.size()) break;
    }
    const std::string note = gzip_note();
    if (!note.empty()) fail("gzip stream ends early at byte " + std::to_string(offset_) + note);
    return extra;
  }

 private:
  // Errors other than Z_BUF_ERROR (stream cut short) are corruption or I/O failures.
  void check_gzip_error() const {
    int errnum = Z_OK;
    gzerror(file_.get(), &errnum);
    if (errnum != Z_OK && errnum != Z_BUF_ERROR) throw_gzip_error();
  }

  // zlib may drop the bytes inflated by the failing call, so the error lies somewhere past
  // offset_, not necessarily at it.
  [[noreturn]] void throw_gzip_error() const {
    int errnum = Z_OK;
    gzerror(file_.get(), &errnum);
    fail(std::string(errnum == Z_ERRNO ? "read" : "gzip") + " error after byte " +
         std::to_string(offset_) + ": " + gz_message());
  }

  // gzerror()'s text without the "<path>: " prefix zlib adds.
  std::string gz_message() const {
    int errnum = Z_OK;
    std::string text = gzerror(file_.get(), &errnum);
    const std::string prefix = path_ + ": ";
    if (text.rfind(prefix, 0) == 0) text.erase(0, prefix.size());
    return text;
  }

  std::string path_;
  GzHandle file_;
  std::size_t offset_ = 0;  // bytes delivered so far
};

std::string hex_byte(std::uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned>(b));
  return buf;
}

std::uint32_t big_endian_u32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

}  // namespace

IdxArray read_idx(const std::string& path, int expected_ndims, std::size_t max_items) {
  IdxStream in(path);

  auto truncated = [&](const char* part, std::size_t expected) {
    in.fail(std::string("truncated ") + part + "at byte " + std::to_string(in.offset()) +
            ": expected " + std::to_string(expected) + " bytes, got " +
            std::to_string(in.offset()) + in.gzip_note());
  };

  std::uint8_t magic[kMagicBytes];
  if (in.read(magic, kMagicBytes) < kMagicBytes) truncated("header ", kMagicBytes);
  if (magic[0] != 0 || magic[1] != 0) {
    in.fail("wrong magic: expected an IDX file starting 0x00 0x00, found " + hex_byte(magic[0]) +
            " " + hex_byte(magic[1]));
  }
  if (magic[2] != kTypeUnsignedByte) {
    in.fail("unsupported data type " + hex_byte(magic[2]) + " (only " +
            hex_byte(kTypeUnsignedByte) + ", unsigned byte, is supported)");
  }
  const int ndims = magic[3];
  if (ndims < 1 || ndims > kMaxDims) {
    in.fail("unsupported number of dimensions " + std::to_string(ndims) + " (must be 1.." +
            std::to_string(kMaxDims) + ")");
  }
  if (expected_ndims > 0 && ndims != expected_ndims) {
    in.fail("expected " + std::to_string(expected_ndims) + " dimensions, found " +
            std::to_string(ndims));
  }

  const std::size_t header_bytes = kMagicBytes + kDimBytes * static_cast<std::size_t>(ndims);
  std::uint8_t raw_dims[kDimBytes * kMaxDims];
  if (in.read(raw_dims, header_bytes - kMagicBytes) < header_bytes - kMagicBytes) {
    truncated("header ", header_bytes);
  }

  IdxArray out;
  std::size_t count = 1;  // product of dims = number of values
  for (int d = 0; d < ndims; ++d) {
    const std::uint32_t dim = big_endian_u32(raw_dims + kDimBytes * static_cast<std::size_t>(d));
    if (dim == 0) in.fail("dimension " + std::to_string(d) + " is zero");
    if (count > (std::numeric_limits<std::size_t>::max() - header_bytes) / dim) {
      in.fail("dimensions too large: their product overflows");
    }
    count *= dim;
    out.dims.push_back(dim);
  }

  // Only the first `items` items when limited; their bytes are a prefix of the data.
  const bool limited = max_items > 0 && max_items < out.dims[0];
  out.items = limited ? max_items : out.dims[0];
  const std::size_t wanted = count / out.dims[0] * out.items;

  // Grow the buffer as data arrives, so a corrupt header cannot demand a huge allocation.
  const std::size_t total_bytes = header_bytes + count;
  out.values.reserve(std::min(wanted, kChunkBytes));
  std::size_t got = 0;
  while (got < wanted) {
    const std::size_t want = std::min(wanted - got, kChunkBytes);
    out.values.resize(got + want);
    const std::size_t r = in.read(out.values.data() + got, want);
    got += r;
    if (r < want) truncated("", total_bytes);
  }
  if (limited) return out;

  const std::size_t extra = in.count_remaining();
  if (extra > 0) {
    in.fail(std::to_string(extra) + " trailing bytes after the data, which ends at byte " +
            std::to_string(total_bytes));
  }
  return out;
}

}  // namespace dbs::data
