// An in-process group of `size` ranks backed by threads, for tests of distributed logic without
// mpirun. Collectives meet at a shared barrier and sum in rank order, so results are
// deterministic and identical on every rank. abort() on one rank, or an exception escaping a
// rank's body in run(), makes every pending and later collective of the group throw
// CommError("aborted by rank R") instead of hanging.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "lib/comm/communicator.h"

namespace dbs::comm {

namespace detail {
struct LocalState;
}

class LocalGroup {
 public:
  explicit LocalGroup(int size);
  ~LocalGroup();
  LocalGroup(const LocalGroup&) = delete;
  LocalGroup& operator=(const LocalGroup&) = delete;

  int size() const;
  // The communicator of `rank`; use each from one thread at a time.
  Communicator& at(int rank);
  // Whether some rank aborted (by abort() or, under run(), by throwing).
  bool aborted() const;

  // Runs body on `size` threads, rank r on at(r), and joins them. Rethrows the first exception
  // any rank threw; throws CommError if a rank called abort() and nothing was thrown.
  static void run(int size, const std::function<void(Communicator&)>& body);

 private:
  std::shared_ptr<detail::LocalState> state_;
  std::vector<std::unique_ptr<Communicator>> comms_;
};

}  // namespace dbs::comm
