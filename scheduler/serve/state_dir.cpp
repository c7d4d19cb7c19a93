#include "scheduler/serve/state_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "lib/common/atomic_file.h"
#include "lib/common/error.h"
#include "lib/common/log.h"
#include "lib/common/read_file.h"

namespace dbs::scheduler {
namespace {

void sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    throw InputError(dir + ": cannot sync the directory: " + std::strerror(e));
  }
  ::close(fd);
}

// The version a journal's first line declares: 0 when it is no header record.
int header_version(const std::string& path, const std::string& first_line) {
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(first_line);
  } catch (const nlohmann::json::exception&) {
    return 0;  // a torn or unreadable record: restore quarantines it
  }
  if (!h.is_object() || !h.contains("format")) return 0;
  if (h["format"] != "dbs-journal" || !h.contains("version") || !h["version"].is_number_integer() ||
      h["version"].get<std::int64_t>() < 1)
    throw ConfigError(path + " line 1: not a dbs-journal header (want {\"format\": " +
                      "\"dbs-journal\", \"version\": N}); nothing was changed");
  const std::int64_t v = h["version"].get<std::int64_t>();
  if (v > kJournalVersion)
    throw ConfigError(path + ": journal format version " + std::to_string(v) +
                      " is newer than this dbs-scheduler reads (versions 0 to " +
                      std::to_string(kJournalVersion) +
                      "); nothing was changed. Run the dbs-scheduler that wrote it, or restore a " +
                      "backup of version " + std::to_string(kJournalVersion) +
                      " or older into a new state directory");
  return static_cast<int>(v);
}

bool is_header(const nlohmann::json& j) {
  return j.is_object() && j.contains("format");
}

}  // namespace

std::string journal_header() {
  return nlohmann::json{{"format", "dbs-journal"}, {"version", kJournalVersion}}.dump() + "\n";
}

int journal_version(const std::string& dir) {
  const std::string path = dir + "/journal.jsonl";
  std::ifstream f(path, std::ios::binary);
  std::string first;
  if (!f || !std::getline(f, first)) return 0;
  return header_version(path, first);
}

namespace {

// Replaces DIR/journal.jsonl by text atomically. A journal of version 0 is copied to
// DIR/journal.v0.jsonl first and the copy removed once the new journal and the directory are
// synced: the migration.
void replace_journal(const std::string& dir, const std::string& text) {
  const std::string path = dir + "/journal.jsonl", copy = dir + "/journal.v0.jsonl";
  std::string old;
  const int version = journal_version(dir);
  std::ifstream f(path, std::ios::binary);
  const bool migrating = f && version == 0;
  if (migrating) {
    write_file_atomic(copy, read_rest(f));
  }
  write_file_atomic(path, text);
  if (!migrating) return;
  sync_dir(dir);
  if (::unlink(copy.c_str()) != 0)
    throw InputError(copy + ": cannot remove after the migration: " + std::strerror(errno));
  log::info(path + ": migrated from journal format version 0 to " +
            std::to_string(kJournalVersion));
}

}  // namespace

int migrate_journal(const std::string& dir) {
  const std::string path = dir + "/journal.jsonl", copy = dir + "/journal.v0.jsonl";
  const int version = journal_version(dir);
  if (version == kJournalVersion) {
    if (::unlink(copy.c_str()) == 0) log::info(copy + ": removed, the migration was durable");
    return version;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) return version;  // no journal yet: Journal::start writes the header
  replace_journal(dir, journal_header() + read_rest(f));
  return version;
}

void prepare_state_dir(const std::string& dir) {
  // Missing parents are made as by mkdir -p; the state directory itself is private (0700).
  std::filesystem::path leaf = std::filesystem::path(dir).lexically_normal();
  if (!leaf.has_filename()) leaf = leaf.parent_path();
  if (leaf.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(leaf.parent_path(), ec);
    if (ec) throw ConfigError("--state-dir " + dir + ": " + ec.message());
  }
  for (const std::string& d : {dir, dir + "/traces"}) {
    if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST)
      throw ConfigError("--state-dir " + d + ": " + std::strerror(errno));
    struct stat st {};
    if (::stat(d.c_str(), &st) != 0)
      throw ConfigError("--state-dir " + d + ": " + std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) throw ConfigError("--state-dir " + d + " is not a directory");
  }
}

std::vector<JournalRecord> read_journal(const std::string& dir,
                                        std::vector<JournalRecord>* unreadable) {
  const std::string path = dir + "/journal.jsonl";
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  const std::string bytes = read_rest(f);
  const std::size_t whole = bytes.rfind('\n') == std::string::npos ? 0 : bytes.rfind('\n') + 1;
  if (whole < bytes.size()) {
    log::warn(path + ": dropping " + std::to_string(bytes.size() - whole) +
              " bytes of an unfinished last record");
    if (::truncate(path.c_str(), static_cast<off_t>(whole)) != 0)
      throw InputError(path + ": cannot truncate: " + std::strerror(errno));
  }
  std::vector<JournalRecord> out;
  std::size_t at = 0, line = 0;
  while (at < whole) {
    const std::size_t nl = bytes.find('\n', at);
    ++line;
    JournalRecord r;
    r.line = line;
    r.text = bytes.substr(at, nl - at);
    at = nl + 1;
    if (r.text.empty()) continue;
    std::string bad;
    try {
      r.json = nlohmann::json::parse(r.text);
      if (line == 1 && is_header(r.json)) {
        header_version(path, r.text);  // throws unless one this daemon reads
        continue;
      }
      if (!r.json.is_object() || !r.json.contains("type") || !r.json["type"].is_string() ||
          !r.json.contains("job") || !r.json["job"].is_string())
        bad = "not a journal record";
    } catch (const nlohmann::json::exception&) {
      bad = "not JSON";
    }
    if (bad.empty()) {
      out.push_back(std::move(r));
    } else if (unreadable != nullptr) {
      unreadable->push_back(std::move(r));
    } else {
      throw InputError(path + " line " + std::to_string(line) + ": " + bad);
    }
  }
  return out;
}

std::vector<bool> still_running(const std::vector<JournalRecord>& records) {
  std::map<std::string, std::size_t> last_finished;  // job -> index + 1 of its last "finished"
  for (std::size_t i = 0; i < records.size(); ++i)
    if (records[i].json.value("type", "") == "finished")
      last_finished[records[i].json.value("job", "")] = i + 1;
  std::vector<bool> keep(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto it = last_finished.find(records[i].json.value("job", ""));
    keep[i] = (it == last_finished.end() || i + 1 > it->second) &&
              records[i].json.value("type", "") != "pruned";
  }
  return keep;
}

void rewrite_journal(const std::string& dir, const std::vector<std::string>& lines) {
  std::string text = journal_header();
  for (const auto& l : lines) {
    text += l;
    text += '\n';
  }
  replace_journal(dir, text);
}

std::string quarantine(const std::string& dir, const std::string& job,
                       const std::vector<std::string>& lines) {
  const std::string qdir = dir + "/quarantine";
  if (::mkdir(qdir.c_str(), 0700) != 0 && errno != EEXIST)
    throw InputError(qdir + ": " + std::strerror(errno));
  const std::string stem = qdir + "/" + job + "." + std::to_string(::time(nullptr));
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  write_file_atomic(stem + ".journal.jsonl", text);
  const std::string trace = dir + "/traces/" + job + ".jsonl";
  if (::rename(trace.c_str(), (stem + ".trace.jsonl").c_str()) != 0 && errno != ENOENT)
    throw InputError(trace + ": cannot move aside: " + std::strerror(errno));
  return stem + ".journal.jsonl";
}

void write_trace(const std::string& dir, const std::string& job, const std::string& text,
                 bool keep_time) {
  const std::string path = dir + "/traces/" + job + ".jsonl";
  struct stat old {};
  const bool had = keep_time && ::stat(path.c_str(), &old) == 0;
  write_file_atomic(path, text);
  const struct timespec times[2] = {old.st_atim, old.st_mtim};
  if (had && ::utimensat(AT_FDCWD, path.c_str(), times, 0) != 0)
    log::warn(path + ": cannot keep its time: " + std::strerror(errno));
}

}  // namespace dbs::scheduler
