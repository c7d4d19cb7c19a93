// JobTable::restore: the jobs of a state directory after a restart (or a kill -9). A job whose
// records cannot be restored is quarantined - its journal lines and trace moved aside, logged,
// listed on /status and the page - and every other job is restored.
#include <map>
#include <set>

#include "lib/common/error.h"
#include "lib/common/fields.h"
#include "lib/common/log.h"
#include "lib/net/printable.h"
#include "lib/proto/checks.h"
#include "lib/proto/codec.h"
#include "scheduler/serve/jobs.h"
#include "scheduler/serve/state_dir.h"

namespace dbs::scheduler {

// Applies one journal record to the table. Throws Error or nlohmann::json::exception.
void JobTable::apply(const JournalRecord& r, std::map<std::string, std::string>& traces) {
  const std::string type = r.json["type"], id = r.json["job"];
  const auto it = jobs_.find(id);
  if (type == "job") {
    if (it != jobs_.end() && !it->second->finished)
      throw InputError("job '" + id + "' created twice");
    const int world = r.json.at("world").get<int>();
    if (world < 1 || world > proto::kMaxWorld) throw InputError("bad world");
    const Settings config = policy::settings_from_json(Fields(r.json.at("config"), "config"));
    proto::check_bounds(config);
    auto job = std::make_unique<Job>(id, world, config);
    traces[id] = trace_start(*job);
    auto& live = *(jobs_[id] = std::make_unique<LiveJob>(io_, std::move(job), ++serials_));
    if (r.json.contains("owner"))  // none: made with the token, or journalled before owners
      live.owner = r.json.at("owner").get<std::uint32_t>();
  } else if (type == "pruned") {  // its trace went with the retention: it is not restored
    if (it != jobs_.end() && it->second->finished) {
      jobs_.erase(it);
      traces.erase(id);
    }
  } else if (it == jobs_.end()) {
    throw InputError("record of unknown job '" + id + "'");
  } else if (type == "epoch") {
    Job& job = *it->second->job;
    const EpochOutcome o = outcome_from_json(r.json, job.world());
    for (const auto& rep : r.json["reports"]) {
      const Fields f(rep, "epoch record: report");
      job.set_rank_info(rep["rank"].get<int>(),
                        {f.string_or("host", "", 255), f.string_or("waiting", "", 255)});
    }
    job.commit(o);
    traces[id] += trace_lines(o, job.rank_info());
  } else if (type == "finished") {
    it->second->finished = true;
  } else if (type == "stopped" || type == "running") {
    it->second->stopped = type == "stopped";
  } else {
    throw InputError("unknown record type '" + net::printable(type) + "'");
  }
}

void JobTable::restore(const std::string& dir) {
  std::vector<JournalRecord> unreadable;
  const std::vector<JournalRecord> records = read_journal(dir, &unreadable);
  std::map<std::string, std::string> traces;  // job -> trace text
  std::map<std::string, std::string> bad;     // job -> why it is quarantined
  for (const JournalRecord& r : records) {
    const std::string id = r.json["job"];
    if (bad.count(id) != 0) continue;
    try {
      apply(r, traces);
    } catch (const std::exception& e) {  // Error or nlohmann::json::exception
      bad[id] = dir + "/journal.jsonl line " + std::to_string(r.line) + ": " + e.what();
      jobs_.erase(id);
      traces.erase(id);
    }
  }
  for (const auto& [id, why] : bad) {
    std::vector<std::string> lines;
    for (const JournalRecord& r : records)
      if (r.json["job"] == id) lines.push_back(r.text);
    const std::string path = quarantine(dir, id, lines);
    log::error("job '" + net::printable(id) + "' quarantined to " + path + ": " +
               net::printable(why));
    quarantined_.push_back({id, why, path});
  }
  if (!unreadable.empty()) {
    std::vector<std::string> lines;
    for (const JournalRecord& r : unreadable) lines.push_back(r.text);
    const std::string path = quarantine(dir, "unreadable-lines", lines);
    const std::string why = dir + "/journal.jsonl: " + std::to_string(lines.size()) +
                            " lines that are not journal records, the first line " +
                            std::to_string(unreadable.front().line);
    log::error(why + ": moved to " + path);
    quarantined_.push_back({"", why, path});
  }
  for (auto& [id, live] : jobs_) {
    write_trace(dir, id, traces[id], live->finished);
    live->set_plan(live->job->current());
    log::info("job '" + id + "' restored at epoch " +
              std::to_string(live->job->current().epoch + 1) +
              (live->finished ? " (finished)" : ""));
  }
  // Compaction: finished and quarantined jobs leave the journal (finished traces are complete).
  std::vector<JournalRecord> good;
  for (const JournalRecord& r : records)
    if (bad.count(r.json["job"]) == 0) good.push_back(r);
  const std::vector<bool> keep = still_running(good);
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < good.size(); ++i)
    if (keep[i]) lines.push_back(good[i].text);
  if (lines.size() != records.size() || !unreadable.empty()) rewrite_journal(dir, lines);
  for (const auto& [id, live] : jobs_)
    if (live->finished) finished_.push_back(id);
  while (finished_.size() > kFinishedKept) {
    jobs_.erase(finished_.front());
    finished_.pop_front();
  }
  std::set<std::string> unfinished;
  for (const auto& [id, live] : jobs_)
    if (!live->finished) unfinished.insert(id);
  retention_.scan(dir, unfinished);
  prune();
}

}  // namespace dbs::scheduler
