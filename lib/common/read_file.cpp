#include "lib/common/read_file.h"

#include <array>

namespace dbs {

std::string read_rest(std::istream& in) {
  std::string out;
  const std::istream::pos_type at = in.tellg();
  if (at != std::istream::pos_type(-1) && in.seekg(0, std::ios::end)) {
    const std::istream::pos_type end = in.tellg();
    in.seekg(at);
    if (end != std::istream::pos_type(-1) && end > at)
      out.reserve(static_cast<std::size_t>(end - at));
  }
  in.clear(in.rdstate() & std::ios::badbit);
  std::array<char, 1 << 16> chunk;
  while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0)
    out.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
  return out;
}

}  // namespace dbs
