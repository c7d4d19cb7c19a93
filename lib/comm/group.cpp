#include "lib/comm/group.h"

namespace dbs::comm {

Group group_of(Communicator& comm) {
  Group g;
  g.rank = comm.rank();
  g.size = comm.size();
  g.host = comm.host();
  g.waiting = comm.waiting();
  g.allgather = [&comm](const void* in, std::size_t bytes, void* out) {
    comm.allgather_bytes(in, bytes, out);
  };
  return g;
}

}  // namespace dbs::comm
