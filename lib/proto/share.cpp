#include "lib/proto/share.h"

#include <bit>
#include <type_traits>

#include "lib/common/hash.h"

namespace dbs::proto {
namespace {

static_assert(std::is_trivially_copyable_v<Share> && sizeof(Share) == 32);

// Folds 64-bit words into a hash, in order (splitmix64's mixer is a bijection).
struct Hasher {
  std::uint64_t h = 0x64627321;  // "dbs!"
  void add(std::uint64_t w) { h = mix64(h + kSplitmixGamma + w); }
  void add(double x) { add(std::bit_cast<std::uint64_t>(x)); }
  void add(const std::string& s) {
    add(static_cast<std::uint64_t>(s.size()));
    for (std::size_t i = 0; i < s.size(); i += 8) {
      std::uint64_t w = 0;
      for (std::size_t k = i; k < s.size() && k < i + 8; ++k)
        w = (w << 8) | static_cast<unsigned char>(s[k]);
      add(w);
    }
  }
};

std::uint64_t head_hash(std::int64_t epoch, int world, int global_batch, double predicted,
                        double ideal, bool changed, const std::string& reason) {
  Hasher h;
  h.add(static_cast<std::uint64_t>(epoch));
  h.add(static_cast<std::uint64_t>(world));
  h.add(static_cast<std::uint64_t>(global_batch));
  h.add(predicted);
  h.add(ideal);
  h.add(std::uint64_t{changed});
  h.add(reason);
  return h.h;
}

}  // namespace

std::uint64_t plan_hash(const Plan& p) {
  Hasher h;
  h.add(head_hash(p.epoch, p.world(), p.global_batch, p.predicted_epoch_s, p.ideal_epoch_s,
                  p.changed, p.reason));
  for (std::size_t i = 0; i < p.batch.size(); ++i) {
    h.add((static_cast<std::uint64_t>(static_cast<std::uint32_t>(p.batch[i])) << 32) |
          static_cast<std::uint32_t>(p.offset[i]));
    h.add(i < p.throughput.size() ? p.throughput[i] : 0.0);
  }
  return h.h == 0 ? 1 : h.h;
}

PlanMsg share_of(const std::string& job, const Plan& p, int rank, std::uint64_t hash) {
  const auto i = static_cast<std::size_t>(rank);
  PlanMsg m{job,
            p.epoch,
            rank,
            p.world(),
            p.global_batch,
            p.batch[i],
            p.offset[i],
            i < p.throughput.size() ? p.throughput[i] : 0.0,
            p.predicted_epoch_s,
            p.ideal_epoch_s,
            p.changed,
            p.reason,
            hash};
  m.exchange_epoch_s = p.exchange_epoch_s;
  return m;
}

Share share_of(const PlanMsg& m) {
  return {m.batch, m.offset, m.throughput, m.hash,
          head_hash(m.epoch, m.world, m.global_batch, m.predicted_epoch_s, m.ideal_epoch_s,
                    m.changed, m.reason)};
}

std::optional<Plan> assemble(const PlanMsg& mine, std::span<const Share> all, std::string& why) {
  std::string lacking;
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r].hash == 0 || all[r].hash != all[0].hash || all[r].head != all[0].head)
      lacking += (lacking.empty() ? "" : ", ") + std::to_string(r);
  if (!lacking.empty()) {
    why = "ranks " + lacking + " lack the daemon's plan or hold another";
    return std::nullopt;
  }
  Plan p;
  p.epoch = mine.epoch;
  p.global_batch = mine.global_batch;
  for (const Share& s : all) {
    p.batch.push_back(s.batch);
    p.offset.push_back(s.offset);
    p.throughput.push_back(s.throughput);
  }
  p.predicted_epoch_s = mine.predicted_epoch_s;
  p.ideal_epoch_s = mine.ideal_epoch_s;
  p.exchange_epoch_s = mine.exchange_epoch_s;
  p.changed = mine.changed;
  p.reason = mine.reason;
  if (plan_hash(p) != all[0].hash) {
    why = "the daemon's plan shares do not add up to the plan it hashed";
    return std::nullopt;
  }
  return p;
}

}  // namespace dbs::proto
