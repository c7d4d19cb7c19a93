#include "scheduler/serve/retention.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "lib/common/error.h"
#include "lib/common/log.h"

namespace dbs::scheduler {
namespace {

namespace fs = std::filesystem;

Retention::Time mtime_of(const fs::directory_entry& e) {
  // file_clock and system_clock share their epoch in libstdc++ (both count from 1970).
  const auto t = e.last_write_time();
  return Retention::Time(std::chrono::duration_cast<Retention::Time::duration>(
      fs::file_time_type::clock::to_sys(t).time_since_epoch()));
}

}  // namespace

void Retention::scan(const std::string& dir, const std::set<std::string>& unfinished) {
  finished_.clear();
  quarantined_.clear();
  std::error_code ec;
  for (const auto& [sub, list] : {std::pair{std::string("/traces"), &finished_},
                                  {std::string("/quarantine"), &quarantined_}}) {
    const fs::path d = dir + sub;
    if (!fs::exists(d, ec)) continue;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      const std::string name = it->path().filename().string();
      if (list == &finished_) {
        if (name.size() <= 6 || !name.ends_with(".jsonl") ||
            name.find(".tmp.") != std::string::npos)
          continue;
        const std::string job = name.substr(0, name.size() - 6);
        if (unfinished.count(job) == 0) list->push_back({job, mtime_of(*it)});
      } else {
        list->push_back({it->path().string(), mtime_of(*it)});
      }
    }
    if (ec) throw InputError(d.string() + ": cannot list: " + ec.message());
  }
  const auto by_time = [](const Kept& a, const Kept& b) { return a.when < b.when; };
  std::stable_sort(finished_.begin(), finished_.end(), by_time);
  std::stable_sort(quarantined_.begin(), quarantined_.end(), by_time);
}

void Retention::finished(const std::string& job, Time when) {
  reopened(job);
  finished_.push_back({job, when});
}

void Retention::reopened(const std::string& job) {
  std::erase_if(finished_, [&](const Kept& k) { return k.name == job; });
}

bool Retention::expired(const Kept& k, Time now) const {
  return limits_.retention_s > 0 &&
         std::chrono::duration<double>(now - k.when).count() > limits_.retention_s;
}

std::vector<std::string> Retention::due(Time now) {
  while (!quarantined_.empty() && expired(quarantined_.front(), now)) {
    const std::string& path = quarantined_.front().name;
    if (::unlink(path.c_str()) == 0 || errno == ENOENT) {
      ++pruned_quarantined_;
      log::info(path + ": removed, quarantined longer than --retention");
    } else {
      log::warn(path + ": cannot remove: " + std::strerror(errno));
    }
    quarantined_.pop_front();
  }
  std::vector<std::string> out;
  while (!finished_.empty() &&
         ((limits_.keep_finished > 0 && finished_.size() > limits_.keep_finished) ||
          expired(finished_.front(), now))) {
    out.push_back(finished_.front().name);
    finished_.pop_front();
    ++pruned_finished_;
  }
  return out;
}

nlohmann::json Retention::to_json() const {
  return {{"keep_finished",
           limits_.keep_finished > 0 ? nlohmann::json(limits_.keep_finished) : nlohmann::json()},
          {"retention_s",
           limits_.retention_s > 0 ? nlohmann::json(limits_.retention_s) : nlohmann::json()},
          {"finished_kept", finished_.size()},
          {"quarantined_kept", quarantined_.size()},
          {"pruned_finished", pruned_finished_},
          {"pruned_quarantined", pruned_quarantined_}};
}

}  // namespace dbs::scheduler
