#include "scheduler/serve/archive.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "lib/common/error.h"

namespace dbs::scheduler {
namespace {

constexpr std::size_t kBlock = 512;
// Offsets and widths of the ustar header fields used here.
constexpr std::size_t kName = 0, kNameLen = 100, kMode = 100, kSize = 124, kMtime = 136,
                      kChecksum = 148, kType = 156, kMagic = 257, kPrefix = 345, kPrefixLen = 155;

void put_octal(std::string& h, std::size_t at, std::size_t width, unsigned long long v) {
  std::snprintf(h.data() + at, width, "%0*llo", static_cast<int>(width - 1), v);
}

unsigned checksum(const std::string& h) {
  unsigned sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i)
    sum += i >= kChecksum && i < kChecksum + 8 ? ' ' : static_cast<unsigned char>(h[i]);
  return sum;
}

std::string field(const std::string& h, std::size_t at, std::size_t width) {
  const std::string s = h.substr(at, width);
  return s.substr(0, s.find('\0'));
}

bool octal(const std::string& text, unsigned long long& out) {
  out = 0;
  bool any = false;
  for (const char c : text) {
    if (c == ' ') continue;
    if (c < '0' || c > '7') return false;
    out = out * 8 + static_cast<unsigned>(c - '0');
    any = true;
  }
  return any;
}

}  // namespace

std::string write_archive(const std::vector<ArchiveMember>& members) {
  std::string out;
  for (const ArchiveMember& m : members) {
    const std::size_t slash = m.path.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : m.path.substr(0, slash);
    const std::string name = slash == std::string::npos ? m.path : m.path.substr(slash + 1);
    if (name.empty() || name.size() > kNameLen || dir.size() > kPrefixLen)
      throw InputError(m.path + ": the name does not fit in a tar header");
    std::string h(kBlock, '\0');
    std::memcpy(h.data() + kName, name.data(), name.size());
    std::memcpy(h.data() + kPrefix, dir.data(), dir.size());
    put_octal(h, kMode, 8, 0600);
    put_octal(h, 108, 8, 0);  // uid
    put_octal(h, 116, 8, 0);  // gid
    put_octal(h, kSize, 12, m.bytes.size());
    put_octal(h, kMtime, 12, 0);
    h[kType] = '0';
    std::memcpy(h.data() + kMagic,
                "ustar\0"
                "00",
                8);
    std::snprintf(h.data() + kChecksum, 8, "%06o", checksum(h));
    h[kChecksum + 7] = ' ';
    out += h;
    out += m.bytes;
    out.append((kBlock - m.bytes.size() % kBlock) % kBlock, '\0');
  }
  out.append(2 * kBlock, '\0');
  return out;
}

std::vector<ArchiveMember> read_archive(const std::string& bytes, const std::string& name) {
  std::vector<ArchiveMember> out;
  std::size_t at = 0;
  for (;;) {
    if (at + kBlock > bytes.size())
      throw InputError(name + ": truncated: the archive ends " +
                       (out.empty() ? std::string("before its first member")
                                    : "after member " + out.back().path) +
                       " without its end marker");
    const std::string h = bytes.substr(at, kBlock);
    if (std::all_of(h.begin(), h.end(), [](char c) { return c == '\0'; })) {
      if (at + 2 * kBlock > bytes.size())
        throw InputError(name + ": truncated: the archive's end marker is cut short");
      return out;
    }
    unsigned long long sum = 0, size = 0;
    if (!octal(field(h, kChecksum, 8), sum) || sum != checksum(h))
      throw InputError(name + ": not a tar archive, or damaged: bad header checksum at byte " +
                       std::to_string(at));
    ArchiveMember m;
    const std::string prefix = field(h, kPrefix, kPrefixLen);
    m.path = (prefix.empty() ? "" : prefix + "/") + field(h, kName, kNameLen);
    if (h[kType] != '0' && h[kType] != '\0')
      throw InputError(name + ": member " + m.path + " is not a regular file");
    if (!octal(field(h, kSize, 12), size))
      throw InputError(name + ": member " + m.path + ": bad size field");
    at += kBlock;
    if (size > bytes.size() - at)
      throw InputError(name + ": truncated: the archive ends inside member " + m.path);
    m.bytes = bytes.substr(at, size);
    at += (size + kBlock - 1) / kBlock * kBlock;
    out.push_back(std::move(m));
  }
}

}  // namespace dbs::scheduler
