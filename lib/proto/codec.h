// JSON form of the messages: encode() writes one line, decode() reads one strictly. Every
// rejection is a ProtocolError whose message names the field and what is wrong with it, e.g.
//   malformed JSON at byte 7
//   message is not a JSON object
//   missing field 'rank'
//   field 'rank' must be an integer, got string
//   field 'world' must be an integer in [1, 1000000], got 0
//   field 'compute_s' must be a finite number >= 0, got -1
//   unsupported protocol version 2 (expected 1)
//   unknown message type 'hello'
//   rank 2 out of range for a job of 2 ranks
#pragma once

#include <nlohmann/json.hpp>
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

// The JSON objects inside messages, also used by the daemon's journal. The *_from_json
// functions are as strict as decode and throw ProtocolError.
nlohmann::json config_json(const JobConfig& config);
JobConfig config_from_json(const nlohmann::json& j);
nlohmann::json plan_json(const policy::Plan& plan);  // epoch + 1 on the wire
policy::Plan plan_from_json(const nlohmann::json& j);
nlohmann::json report_json(const policy::Report& report);
policy::Report report_from_json(const nlohmann::json& j);

}  // namespace dbs::proto
