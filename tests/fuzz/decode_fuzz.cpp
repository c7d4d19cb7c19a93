// libFuzzer target: bytes as they come off a socket, through the framing and the decoder.
// Every line is decoded or refused with a ProtocolError; what decodes encodes to a line that
// decodes to the same message, and every decoded plan or report is within lib/proto's bounds. A
// decoded register's "auth" is empty or "munge:" and a credential of printable ASCII without
// spaces, at most kMaxAuth bytes in all (what reaches munged and the daemon's log), and the
// payload that binds a credential to the register names its job and rank on one line.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "lib/proto/checks.h"
#include "lib/proto/codec.h"
#include "lib/proto/framing.h"

namespace {

using namespace dbs;

void check(bool ok) {
  if (!ok) std::abort();
}

void check_register(const proto::RegisterMsg& r) {
  if (!r.auth.empty()) {
    const std::string_view scheme = proto::kMungeScheme;
    check(r.auth.size() > scheme.size() && r.auth.size() <= proto::kMaxAuth &&
          r.auth.compare(0, scheme.size(), scheme) == 0);
    for (const char c : r.auth) check(c > 0x20 && c < 0x7f);
  }
  const std::string payload = proto::munge_payload(r.job, r.rank);
  check(payload.find('\n') == std::string::npos &&
        payload.ends_with(" job=" + r.job + " rank=" + std::to_string(r.rank)));
}

void round_trip(std::string_view line) {
  proto::Message m;
  try {
    m = proto::decode(line);
  } catch (const proto::ProtocolError&) {
    return;  // refused: the expected fate of most inputs
  }
  std::string again = proto::encode(m);
  check(!again.empty() && again.back() == '\n');
  again.pop_back();
  check(again.find('\n') == std::string::npos);
  const proto::Message back = proto::decode(again);  // must not throw
  check(back == m);
  if (const auto* r = std::get_if<proto::ReportMsg>(&m)) proto::check_bounds(r->report);
  if (const auto* p = std::get_if<proto::PlanMsg>(&m)) proto::check_bounds(*p);
  if (const auto* r = std::get_if<proto::RegisterMsg>(&m)) check_register(*r);
}

// The longest line the daemon reads before a connection registered (net::SessionLimits).
constexpr std::size_t kHelloMax = 64 * 1024;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  proto::LineReader reader(kHelloMax);
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // Fed in two pieces, so lines are also assembled across reads.
  const std::size_t cut = size / 3;
  const auto on_line = [](std::string_view line) {
    round_trip(line);
    return true;
  };
  if (reader.feed(bytes.substr(0, cut), on_line)) reader.feed(bytes.substr(cut), on_line);
  round_trip(bytes.substr(0, std::min(size, kHelloMax)));  // the input as one line
  return 0;
}
