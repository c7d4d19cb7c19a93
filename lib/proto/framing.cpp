#include "lib/proto/framing.h"

namespace dbs::proto {

std::string LineReader::too_long_message() const {
  return "message longer than " + std::to_string(max_line_) + " bytes";
}

}  // namespace dbs::proto
