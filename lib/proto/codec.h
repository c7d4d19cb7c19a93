// JSON form of the messages: encode() writes one line, decode() reads one strictly. The objects
// inside (a report, the policy settings) are the JSON forms of lib/policy/plan.h. Every
// rejection is a ProtocolError whose message names the field and what is wrong with it, e.g.
//   malformed JSON at byte 7
//   message is not a JSON object
//   missing field 'rank'
//   field 'rank' must be an integer, got string
//   field 'world' must be an integer in [1, 1000000], got 0
//   field 'compute_s' must be a finite number >= 0, got -1
//   unsupported protocol version 1 (expected 2)
//   unknown message type 'hello'
//   rank 2 out of range for a job of 2 ranks
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/proto/messages.h"
#include "lib/proto/protocol.h"

namespace dbs::proto {

// One line with its "\n". Non-finite times of a report are written as null (JSON has no NaN)
// and refused by decode.
std::string encode(const Message& message);
// One line without its "\n". Throws ProtocolError.
Message decode(std::string_view line);

// The error message sent before closing a connection.
std::string encode_error(ErrorCode code, const std::string& message);

// The plan messages of one plan to each of its ranks. What all ranks receive alike is encoded
// once, so the world's messages cost O(world) together:
// line(r) == encode(share_of(job, plan, r, plan_hash(plan))).
class PlanLines {
 public:
  PlanLines(const std::string& job, policy::Plan plan);
  std::string line(int rank) const;
  const policy::Plan& plan() const { return plan_; }
  std::uint64_t hash() const { return hash_; }  // plan_hash(plan())

 private:
  policy::Plan plan_;
  std::uint64_t hash_;
  std::string head_;  // the message up to the rank's own fields
};

}  // namespace dbs::proto
