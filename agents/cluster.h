// --model synthetic --cluster SPEC: the run an emulated cluster makes (lib/emulate). The spec
// says what the run is: its epochs, samples per epoch, global batch, policy and the policy's
// bounds, and its disturbances. A field the spec gives applies unless the matching option is
// given; an option given with another value than the spec's is an error naming both (so one spec
// without a "policy" serves a static and a dbs run alike). With --model synthetic, --wait
// defaults to sleep (the emulated ranks wait, and a spinning wait would take the cores the others
// wait on) and --threads to 1.
#pragma once

#include <functional>

#include "agents/options.h"
#include "lib/comm/communicator.h"
#include "lib/emulate/workload.h"

namespace dbs::agent {

// Reads o.cluster_path into o.cluster and applies it to o.train; given(option) says whether an
// option was on the command line. Throws ConfigError (the option at fault) or InputError (the
// spec file and field at fault).
void apply_cluster(Options& o, const std::function<bool(const char*)>& given);

// Throws ConfigError unless the spec's ranks are `world` (the MPI world).
void check_world(const replay::Spec& spec, const std::string& path, int world);

// Rank 0 prints one line of what every rank's emulated steps asked for and took (a collective):
//   emulation: 640 steps on 16 ranks; asked 160.000 s, took 160.512 s (+0.32%); wake-ups late
//   by 61 us a step (the latest rank 95 us); 0.41 s CPU
void log_pace(comm::Communicator& comm, const emulate::Pace& mine);

}  // namespace dbs::agent
