// The spec's network, emulated: a Communicator that runs every collective of the one it wraps
// and, after each exchange of the gradient buffer, waits the time the spec's ring allreduce model
// gives it (replay::ring_allreduce_s at the slowest link of any rank: a ring goes at the pace of
// its slowest link). An allreduce (blocking, or started ones at finish) waits the model's time for
// its bytes, a reduce-scatter and an allgather of segments half of it each. The real exchange over
// this machine comes first, so an emulated exchange takes that plus the model's time. The control
// plane's collectives (allgather of bytes, the double allreduce, broadcast, barrier) run as they
// are: the model describes the gradient exchange.
#pragma once

#include <memory>

#include "lib/comm/communicator.h"
#include "lib/replay/synth.h"

namespace dbs::emulate {

// inner must outlive the result.
std::unique_ptr<comm::Communicator> with_network(comm::Communicator& inner,
                                                 const replay::Spec& spec);

}  // namespace dbs::emulate
