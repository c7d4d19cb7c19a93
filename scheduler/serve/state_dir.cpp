#include "scheduler/serve/state_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "lib/common/atomic_file.h"
#include "lib/common/error.h"
#include "lib/common/log.h"

namespace dbs::scheduler {

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
    if (::stat(d.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw ConfigError("--state-dir " + d + " is not a directory");
  }
}

std::vector<JournalRecord> read_journal(const std::string& dir,
                                        std::vector<JournalRecord>* unreadable) {
  const std::string path = dir + "/journal.jsonl";
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::ostringstream buf;
  buf << f.rdbuf();
  const std::string bytes = buf.str();
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
    keep[i] = it == last_finished.end() || i + 1 > it->second;
  }
  return keep;
}

void rewrite_journal(const std::string& dir, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) {
    text += l;
    text += '\n';
  }
  write_file_atomic(dir + "/journal.jsonl", text);
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

void write_trace(const std::string& dir, const std::string& job, const std::string& text) {
  write_file_atomic(dir + "/traces/" + job + ".jsonl", text);
}

}  // namespace dbs::scheduler
