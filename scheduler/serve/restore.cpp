// JobTable::restore: the jobs of a state directory after a restart (or a kill -9).
#include <map>

#include "lib/common/error.h"
#include "lib/common/fields.h"
#include "lib/common/log.h"
#include "lib/proto/codec.h"
#include "scheduler/serve/jobs.h"
#include "scheduler/serve/state_dir.h"

namespace dbs::scheduler {

void JobTable::restore(const std::string& dir) {
  const std::vector<JournalRecord> records = read_journal(dir);
  std::map<std::string, std::string> traces;               // job -> trace text
  std::vector<std::pair<std::string, std::string>> lines;  // (job, record) in order
  for (const JournalRecord& r : records) {
    const std::string type = r.json["type"], id = r.json["job"];
    const auto where = dir + "/journal.jsonl line " + std::to_string(r.line) + ": ";
    try {
      const auto it = jobs_.find(id);
      if (type == "job") {
        if (it != jobs_.end()) throw InputError("job '" + id + "' created twice");
        const int world = r.json.at("world").get<int>();
        if (world < 1 || world > proto::kMaxWorld) throw InputError("bad world");
        auto job = std::make_unique<Job>(
            id, world, policy::settings_from_json(Fields(r.json.at("config"), "config")));
        traces[id] = trace_start(*job);
        jobs_[id] = std::make_unique<LiveJob>(io_, std::move(job));
      } else if (it == jobs_.end()) {
        throw InputError("record of unknown job '" + id + "'");
      } else if (type == "epoch") {
        Job& job = *it->second->job;
        const EpochOutcome o = outcome_from_json(r.json, job.world());
        for (const auto& rep : r.json["reports"])
          if (rep.contains("host") && rep["host"].is_string())
            job.set_host(rep["rank"].get<int>(), rep["host"].get<std::string>());
        job.commit(o);
        traces[id] += trace_lines(o, job.hosts());
      } else if (type == "finished") {
        it->second->finished = true;
      } else {
        throw InputError("unknown record type '" + type + "'");
      }
    } catch (const Error& e) {
      throw InputError(where + e.what());
    } catch (const nlohmann::json::exception& e) {
      throw InputError(where + e.what());
    }
    lines.emplace_back(id, r.text);
  }
  for (auto& [id, live] : jobs_) {
    write_trace(dir, id, traces[id]);
    live->set_plan(live->job->current());
    log::info("job '" + id + "' restored at epoch " +
              std::to_string(live->job->current().epoch + 1) +
              (live->finished ? " (finished)" : ""));
  }
  // Compaction: finished jobs leave the journal (their traces are complete on disk).
  std::vector<std::string> keep;
  for (const auto& [id, text] : lines)
    if (!jobs_.at(id)->finished) keep.push_back(text);
  if (keep.size() != lines.size()) rewrite_journal(dir, keep);
  for (const auto& [id, live] : jobs_)
    if (live->finished) finished_.push_back(id);
  while (finished_.size() > kFinishedKept) {
    jobs_.erase(finished_.front());
    finished_.pop_front();
  }
}

}  // namespace dbs::scheduler
