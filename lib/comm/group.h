// A communicator as the public API's Group (<dbs/planner.h>): its rank, size, host, how it
// waits, and its allgather_bytes. The communicator must outlive the group.
#pragma once

#include <dbs/planner.h>

#include "lib/comm/communicator.h"

namespace dbs::comm {

Group group_of(Communicator& comm);

}  // namespace dbs::comm
