// lib/proto framing: lines out of arbitrary chunks, and the size limit.
#include "lib/proto/framing.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

using dbs::proto::LineReader;

std::vector<std::string> feed_all(LineReader& r, const std::vector<std::string>& chunks,
                                  bool* ok = nullptr) {
  std::vector<std::string> lines;
  bool all = true;
  for (const auto& c : chunks)
    all = r.feed(c, [&](std::string_view l) {
      lines.emplace_back(l);
      return true;
    }) && all;
  if (ok != nullptr) *ok = all;
  return lines;
}

}  // namespace

TEST_CASE("Framing.SplitsLinesAcrossChunks") {
  LineReader r(100);
  const auto lines = feed_all(r, {"ab", "c\nde", "f\n\ng\r\n", "h"});
  CHECK(lines == std::vector<std::string>{"abc", "def", "g"});
  CHECK(r.partial());
  CHECK(feed_all(r, {"\n"}) == std::vector<std::string>{"h"});
  CHECK_FALSE(r.partial());
}

TEST_CASE("Framing.EveryChunkingGivesTheSameLines") {
  const std::string text = "first line\nsecond\r\n\nthird one here\n";
  for (std::size_t size = 1; size <= text.size(); ++size) {
    LineReader r(64);
    std::vector<std::string> chunks;
    for (std::size_t i = 0; i < text.size(); i += size) chunks.push_back(text.substr(i, size));
    CAPTURE(size);
    CHECK(feed_all(r, chunks) ==
          std::vector<std::string>{"first line", "second", "third one here"});
  }
}

TEST_CASE("Framing.LimitIsInclusiveAndEnforcedBeforeTheNewline") {
  LineReader exact(5);
  CHECK(feed_all(exact, {"12345\n"}) == std::vector<std::string>{"12345"});
  CHECK(feed_all(exact, {"12345\r\n"}) == std::vector<std::string>{"12345"});

  LineReader whole(5);
  bool ok = true;
  CHECK(feed_all(whole, {"123456\n"}, &ok).empty());
  CHECK_FALSE(ok);
  CHECK(whole.too_long());
  CHECK(whole.too_long_message() == "message longer than 5 bytes");

  // A client that never sends the newline is cut off as soon as it passes the limit.
  LineReader endless(5);
  CHECK(feed_all(endless, {"123", "456", "789"}, &ok).empty());
  CHECK_FALSE(ok);
  CHECK(endless.too_long());
  CHECK(feed_all(endless, {"\n"}, &ok).empty());  // nothing more is accepted
  CHECK_FALSE(ok);
}

TEST_CASE("Framing.LimitCanGrowForTheLinesToCome") {
  LineReader r(4);
  bool ok = true;
  CHECK(feed_all(r, {"1234\n"}, &ok) == std::vector<std::string>{"1234"});
  r.set_max_line(8);
  CHECK(feed_all(r, {"12345678\n"}, &ok) == std::vector<std::string>{"12345678"});
  CHECK(ok);
}

TEST_CASE("Framing.OnLineCanStopTheRest") {
  LineReader r(100);
  std::vector<std::string> seen;
  r.feed("a\nb\nc\n", [&](std::string_view l) {
    seen.emplace_back(l);
    return false;
  });
  CHECK(seen == std::vector<std::string>{"a"});
}

TEST_CASE("Framing.DefaultLimitIsOneMebibyte") {
  CHECK(LineReader().max_line() == 1048576);
}
