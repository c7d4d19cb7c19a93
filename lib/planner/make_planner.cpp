// make_planner's agreement check: every rank allgathers a fixed-size Seal of its settings, its
// world size and what check_remote found wrong with its remote, and every rank judges all of
// them the same way (a rank's remote at fault, then the first setting where a rank differs from
// rank 0), so every rank reaches the same verdict from the same bytes and none is left waiting
// in a later collective.
#include <dbs/planner.h>

#include <cstring>
#include <string>
#include <type_traits>

#include "lib/common/error.h"
#include "lib/common/hash.h"
#include "lib/planner/planner.h"
#include "lib/planner/remote.h"
#include "lib/planner/remote_check.h"

namespace dbs {
namespace {

struct Seal {
  std::int64_t world = 0, samples_per_epoch = 0;
  std::int32_t global_batch = 0, min_batch = 0, max_batch = 0, rebalance_every = 0;
  std::int32_t average_every = 0, average_after_epochs = 0;
  double min_gain = 0;
  std::uint64_t policy_hash = 0;  // fnv1a of the whole policy spec
  char policy[64] = {};           // its first 63 characters, for the message
  char remote_error[256] = {};    // check_remote's message (its first 255 bytes); "" = none
};
static_assert(std::is_trivially_copyable_v<Seal>);
static_assert(std::is_trivially_copyable_v<Report>);  // allgathered as bytes

Seal seal_of(const Settings& s, int world) {
  Seal seal;
  seal.world = world;
  seal.samples_per_epoch = s.samples_per_epoch;
  seal.global_batch = s.global_batch;
  seal.min_batch = s.min_batch;
  seal.max_batch = s.max_batch;
  seal.rebalance_every = s.rebalance_every;
  seal.average_every = s.average_every;
  seal.average_after_epochs = s.average_after_epochs;
  seal.min_gain = s.min_gain;
  const std::string policy = to_string(s.policy);
  seal.policy_hash = fnv1a(policy.data(), policy.size());
  std::strncpy(seal.policy, policy.c_str(), sizeof seal.policy - 1);
  return seal;
}

// The first field where b differs from a, as "name b (rank 0: a)"; empty when none does.
std::string difference(const Seal& a, const Seal& b) {
  const auto num = [](const char* name, auto x, auto y) {
    return x == y ? std::string()
                  : std::string(name) + " " + std::to_string(y) + " (rank 0: " + std::to_string(x) +
                        ")";
  };
  if (a.policy_hash != b.policy_hash)
    return std::string("policy '") + b.policy + "' (rank 0: '" + a.policy + "')";
  for (const std::string& d :
       {num("world size", a.world, b.world), num("global_batch", a.global_batch, b.global_batch),
        num("samples_per_epoch", a.samples_per_epoch, b.samples_per_epoch),
        num("min_batch", a.min_batch, b.min_batch), num("max_batch", a.max_batch, b.max_batch),
        num("min_gain", a.min_gain, b.min_gain),
        num("rebalance_every", a.rebalance_every, b.rebalance_every),
        num("average_every", a.average_every, b.average_every),
        num("average_after_epochs", a.average_after_epochs, b.average_after_epochs)})
    if (!d.empty()) return d;
  return {};
}

void check_group(const Group& group) {
  if (group.size < 1)
    throw InputError("group size " + std::to_string(group.size) + ": must be at least 1");
  if (group.rank < 0 || group.rank >= group.size)
    throw InputError("rank " + std::to_string(group.rank) + " out of range for a group of " +
                     std::to_string(group.size));
  if (group.size > 1 && !group.allgather)
    throw InputError("a group of " + std::to_string(group.size) + " ranks needs an allgather");
}

// Throws ConfigError on every rank when any rank's remote is at fault (check_remote) or its
// settings or world size differ from rank 0's.
void check_agreement(const Settings& settings, const Group& group, const Remote& remote) {
  Seal mine = seal_of(settings, group.size);
  std::string error;
  try {
    planner::check_remote(remote);
  } catch (const Error& e) {  // ConfigError, as every error of a bad remote
    error = e.what();
    std::strncpy(mine.remote_error, e.what(), sizeof mine.remote_error - 1);
  }
  std::vector<Seal> all(static_cast<std::size_t>(group.size));
  if (group.size == 1) {
    all[0] = mine;
  } else {
    group.allgather(&mine, sizeof mine, all.data());
  }
  if (!error.empty()) throw ConfigError(error);
  for (int r = 0; r < group.size; ++r)
    if (const char* e = all[static_cast<std::size_t>(r)].remote_error; e[0] != '\0')
      throw ConfigError("rank " + std::to_string(r) + ": " + e);
  for (int r = 1; r < group.size; ++r) {
    const std::string d = difference(all[0], all[static_cast<std::size_t>(r)]);
    if (!d.empty())
      throw ConfigError("the ranks disagree on the settings: rank " + std::to_string(r) + " has " +
                        d);
  }
}

}  // namespace

std::unique_ptr<Planner> make_planner(const Settings& settings, const Group& group,
                                      const Remote& remote) {
  check_group(group);
  check_agreement(settings, group, remote);
  if (remote.address.empty()) return std::make_unique<planner::Embedded>(settings, group.size);
  return planner::make_remote(remote, settings, group);
}

std::vector<Report> gather_reports(const Group& group, const Report& mine) {
  check_group(group);
  std::vector<Report> all(static_cast<std::size_t>(group.size));
  if (group.size == 1) {
    all[0] = mine;
  } else {
    group.allgather(&mine, sizeof mine, all.data());
  }
  for (int r = 0; r < group.size; ++r)
    if (all[static_cast<std::size_t>(r)].rank != r)
      throw InputError("rank " + std::to_string(r) + " sent the report of rank " +
                       std::to_string(all[static_cast<std::size_t>(r)].rank));
  return all;
}

}  // namespace dbs
