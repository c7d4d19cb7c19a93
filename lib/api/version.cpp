#include <dbs/version.h>

namespace dbs {

ApiVersion api_version() {
  return {DBS_API_VERSION_MAJOR, DBS_API_VERSION_MINOR};
}

}  // namespace dbs
