// `dbs-scheduler replay`: what-if analysis of balancing policies over a recorded trace, and
// synthetic traces of clusters one does not have (lib/replay does the work).
#include "scheduler/command.h"

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "lib/common/atomic_file.h"
#include "lib/common/cli.h"
#include "lib/common/error.h"
#include "lib/replay/reader.h"
#include "lib/replay/replay.h"
#include "lib/replay/report.h"
#include "lib/replay/summary.h"
#include "lib/replay/synth.h"

namespace dbs::scheduler {
namespace {

struct ReplayCommandOptions {
  std::string trace;             // the trace to replay
  std::string policy;            // one policy (default: the one the trace was recorded with)
  std::string compare;           // several policies side by side, comma-separated
  replay::ReplayOptions replay;  // settings and cost overrides
  bool json = false;             // print the JSON object instead of the table
  std::string report;            // write an HTML report here
  bool strict = false;           // a truncated last line is an error
  std::string synthesize;        // write a synthetic trace from this spec ...
  std::string output;            // ... to this file
};

void warn(const std::string& message) {
  std::fprintf(stderr, "dbs-scheduler replay: warning: %s\n", message.c_str());
}

int run(const ReplayCommandOptions& o) {
  const bool replay_asked = !o.policy.empty() || !o.compare.empty() || o.json || !o.report.empty();
  std::string path = o.trace;
  if (!o.synthesize.empty()) {
    if (o.output.empty()) throw ConfigError("--synthesize needs -o FILE for the trace");
    if (!o.trace.empty()) throw ConfigError("give a TRACE or --synthesize SPEC, not both");
    const replay::Spec spec = replay::read_spec(o.synthesize);
    const std::string text = replay::synthesize(spec);
    write_file_atomic(o.output, text);
    std::fprintf(stderr, "dbs-scheduler replay: wrote %s: %d ranks, %d epochs, %.1f MB\n",
                 o.output.c_str(), spec.world(), spec.epochs,
                 static_cast<double>(text.size()) / 1e6);
    if (!replay_asked) return 0;
    path = o.output;
  } else if (!o.output.empty()) {
    throw ConfigError("-o is for --synthesize; replay writes its report with --report");
  }
  if (path.empty()) throw ConfigError("a TRACE to replay is required (or --synthesize SPEC)");
  if (!o.policy.empty() && !o.compare.empty()) {
    throw ConfigError("give --policy or --compare, not both");
  }
  replay::ReplayOptions options = o.replay;
  if (!o.policy.empty()) options.policies = {parse_policy(o.policy)};
  if (!o.compare.empty()) {
    options.policies = replay::split_policies(o.compare);
    if (options.policies.empty()) throw ConfigError("--compare names no policy");
  }

  replay::ReadOptions ro;
  ro.strict = o.strict;
  const replay::Trace trace = replay::read_trace(path, ro);
  for (const std::string& w : trace.warnings) warn(w);
  const replay::Replay r = replay::replay(trace, options);
  if (o.json) {
    std::printf("%s\n", replay::json_summary(r).dump(2).c_str());
  } else {
    std::printf("%s", replay::text_summary(r).c_str());
  }
  if (!o.report.empty()) {
    write_file_atomic(o.report, replay::html_report(r));
    std::fprintf(stderr, "dbs-scheduler replay: wrote report %s\n", o.report.c_str());
  }
  return 0;
}

}  // namespace

void add_replay_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ReplayCommandOptions>();
  auto* cmd = cli::add_command(
      app, action, "replay",
      "Replay a recorded trace under balancing policies (what-if analysis), or synthesize one.\n"
      "Each rank's measured work per step, alpha + beta * b, is the ground truth (a rank held by\n"
      "a CPU quota runs in its periods); every step costs the slowest rank's work plus an\n"
      "allreduce and overhead fitted from the trace.\n"
      "Examples: dbs-scheduler replay traces/constant-dbs.jsonl\n"
      "          dbs-scheduler replay traces/constant-static.jsonl --compare dbs,static "
      "--report out.html\n"
      "          dbs-scheduler replay --synthesize traces/synth-1000.json -o /tmp/big.jsonl",
      o, run);
  cmd->get_formatter()->column_width(34);
  cmd->add_option("trace", o->trace, "the trace to replay (JSONL, traces/README.md)");
  cmd->add_option("--policy", o->policy,
                  "policy to simulate: dbs, static or fixed:b0,b1,... (default: the trace's)");
  cmd->add_option("--compare", o->compare, "policies side by side, e.g. dbs,static");
  cmd->add_option_function<int>(
         "--rebalance-every", [o](const int& k) { o->replay.settings["rebalance_every"] = k; },
         "re-plan every K steps inside an epoch, 0 = per epoch (default: the trace's)")
      ->check(dbs::cli::at_least(0));
  cmd->add_option_function<double>(
         "--min-gain", [o](const double& g) { o->replay.settings["min_gain"] = g; },
         "keep the plan below this predicted gain (default: the trace's)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option_function<int>(
         "--min-batch", [o](const int& b) { o->replay.settings["min_batch"] = b; },
         "smallest per-rank batch (default: the trace's)")
      ->check(dbs::cli::above(0));
  cmd->add_option_function<int>(
         "--max-batch", [o](const int& b) { o->replay.settings["max_batch"] = b; },
         "largest per-rank batch, 0 = global batch (default: the trace's)")
      ->check(dbs::cli::at_least(0));
  cmd->add_option_function<std::string>(
         "--allreduce-model",
         [o](const std::string& m) { o->replay.cost.algorithm = replay::parse_allreduce(m); },
         "how the allreduce's time follows from its bytes, ranks and link: ring or tree "
         "(default ring)")
      ->check(CLI::IsMember({"ring", "tree"}));
  cmd->add_option_function<double>(
         "--latency", [o](const double& s) { o->replay.cost.latency_s = s; },
         "allreduce latency per message, seconds (default 2e-05)")
      ->check(dbs::cli::at_least(0));
  cmd->add_option_function<double>(
         "--bandwidth", [o](const double& b) { o->replay.cost.bandwidth = b; },
         "allreduce bandwidth, bytes/s, 0 = infinite (default: fitted)")
      ->check(dbs::cli::at_least(0));
  cmd->add_option_function<double>(
         "--overhead", [o](const double& s) { o->replay.cost.overhead_s = s; },
         "per-step overhead besides work and allreduce, seconds (default: fitted)")
      ->check(dbs::cli::at_least(0));
  cmd->add_flag("--json", o->json, "print a JSON object with a key per policy");
  cmd->add_option("--report", o->report, "write a self-contained HTML report here");
  cmd->add_flag("--strict", o->strict,
                "a truncated last line is an error (default: skipped with a warning)");
  cmd->add_option(
      "--synthesize", o->synthesize,
      "write a synthetic trace from this JSON spec (traces/README.md) to -o; with --policy, "
      "--compare, --json or --report, replay it too");
  cmd->add_option("-o,--output", o->output, "where --synthesize writes the trace");
}

}  // namespace dbs::scheduler
