// The state directory's readers on arbitrary bytes: as a backup archive (read_archive, then
// restore_state into a scratch directory) and as a journal (its version, the migration and the
// restore of its jobs, which quarantines what it cannot read). Any input may be refused with
// dbs::Error; nothing else may escape, crash or leak.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "lib/common/error.h"
#include "lib/common/log.h"
#include "scheduler/serve/archive.h"
#include "scheduler/serve/backup.h"
#include "scheduler/serve/jobs.h"
#include "scheduler/serve/state_dir.h"

namespace {

// A directory of this process under $TMPDIR (tests/fuzz/run.sh gives each target its own
// and removes it after the run: libFuzzer's exit runs no clean-up of ours).
const std::string& scratch() {
  static const std::string dir = [] {
    std::string name = (std::filesystem::temp_directory_path() / "dbs-state-fuzz.XXXXXX").string();
    dbs::log::set_level(dbs::log::Level::error);
    if (::mkdtemp(name.data()) == nullptr) throw std::runtime_error("mkdtemp " + name + " failed");
    return name;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fs = std::filesystem;
  using namespace dbs::scheduler;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string root = scratch(), state = root + "/state", archive = root + "/in.tar";
  std::error_code ec;
  fs::remove_all(state, ec);
  try {
    read_archive(bytes, "in.tar");
    std::ofstream(archive, std::ios::binary) << bytes;
    restore_state(archive, state);
  } catch (const dbs::Error&) {
  }
  fs::remove_all(state, ec);
  fs::create_directories(state + "/traces");
  std::ofstream(state + "/journal.jsonl", std::ios::binary) << bytes;
  try {
    journal_version(state);
    dbs::net::asio::io_context io;
    Journal journal("", io, [](const std::string&) {});
    JobTable jobs(io, journal, JobLimits{});
    jobs.restore(state);
    migrate_journal(state);
  } catch (const dbs::Error&) {
  }
  return 0;
}
