#include "lib/common/error.h"

namespace dbs::detail {

void check_failed(const char* file, int line, const std::string& what) {
  std::ostringstream os;
  os << "check failed at " << file << ":" << line << ": " << what;
  throw CheckError(os.str());
}

}  // namespace dbs::detail
