// dbs-lab study record | report: the command line, the grouping of runs into configurations
// and the Markdown tables (the page is study_page.cpp, the record's JSON study_record.cpp).
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "lab/lab.h"
#include "lab/study.h"
#include "lab/study_groups.h"
#include "lib/common/atomic_file.h"
#include "lib/common/error.h"
#include "lib/common/format.h"

namespace dbs::lab {
namespace {

// Appends " text |" (a Markdown cell after its row's opening "|").
void cell(std::string& row, const std::string& text) {
  row += ' ';
  row += text;
  row += " |";
}

std::string pct(double fraction) {
  return format("%.2f", 100 * fraction);
}

// "84.10 / 85.02": the test accuracy after `epoch` (0 = the final one) per seed, in seed order.
std::string per_seed(const Group& g, int epoch) {
  std::string out;
  for (const StudyRun* r : g.runs) {
    if (!out.empty()) out += " / ";
    out += epoch == 0                                    ? pct(r->final_test_acc)
           : epoch <= static_cast<int>(r->epochs.size()) ? pct(r->epochs[epoch - 1].test_acc)
                                                         : "-";
  }
  return out;
}

std::string mean_spread(const Group& g) {
  const Stats s = final_stats(g);
  return g.runs.size() > 1 ? pct(s.mean) + " ± " + format("%.2f", 50 * (s.max - s.min))
                           : pct(s.mean);
}

std::string runs_table(const std::vector<Group>& groups, const std::vector<int>& at) {
  std::string h = "| configuration | peak lr | seeds |";
  std::string rule = "|---|---|---|";
  for (int e : at) h += format(" epoch %d (%%) |", e), rule += "---|";
  h += " final (%) | final mean ± ½ range | wall s (mean) |\n";
  rule += "---|---|---|\n";
  std::string o = h + rule;
  for (const Group& g : groups) {
    const StudyRun& r = *g.runs.front();
    std::string seeds;
    double wall = 0;
    for (const StudyRun* x : g.runs) {
      seeds += (seeds.empty() ? "" : ", ") + std::to_string(x->seed);
      wall += x->wall_s / static_cast<double>(g.runs.size());
    }
    o += '|';
    for (const std::string& c : {g.label, format("%.4g", peak_lr(r)), seeds}) cell(o, c);
    for (int e : at) cell(o, per_seed(g, e));
    for (const std::string& c : {per_seed(g, 0), mean_spread(g), format("%.0f", wall)}) cell(o, c);
    o += '\n';
  }
  return o;
}

// Recipe: for every batch above the base batch, final accuracy by warmup (rows) and scaling.
std::string recipe_pivot(const std::vector<Group>& groups) {
  std::string o;
  std::set<int> batches;
  for (const Group& g : groups)
    if (g.runs.front()->global_batch != g.runs.front()->base_batch)
      batches.insert(g.runs.front()->global_batch);
  for (int b : batches) {
    std::vector<std::string> scalings;  // none first
    std::set<double> warmups;
    for (const char* sc : {"none", "linear", "sqrt"})
      for (const Group& g : groups)
        if (g.runs.front()->global_batch == b && g.runs.front()->lr_scaling == sc) {
          if (std::find(scalings.begin(), scalings.end(), sc) == scalings.end())
            scalings.push_back(sc);
          warmups.insert(g.runs.front()->warmup_epochs);
        }
    o += format(
        "\nFinal test accuracy (%%, mean ± ½ range over seeds) at global batch %d:\n\n"
        "| warmup epochs |",
        b);
    for (const auto& s : scalings) cell(o, s == "none" ? "no scaling" : s + " scaling");
    o += "\n|---|";
    for (std::size_t k = 0; k < scalings.size(); ++k) o += "---|";
    o += "\n";
    for (double w : warmups) {
      o += format("| %g |", w);
      for (const auto& s : scalings) {
        const auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
          const StudyRun& r = *g.runs.front();
          return r.global_batch == b && r.lr_scaling == s && r.warmup_epochs == w;
        });
        cell(o, it == groups.end() ? std::string("-") : mean_spread(*it));
      }
      o += "\n";
    }
  }
  return o;
}

// Filtering: final accuracy by data set (rows) and batch, and the differences in points.
std::string filtering_pivot(const std::vector<Group>& groups) {
  std::set<int> batches;
  std::map<std::string, std::map<int, const Group*>> cells;  // data -> batch -> group
  for (const Group& g : groups) {
    batches.insert(g.runs.front()->global_batch);
    cells[g.runs.front()->data][g.runs.front()->global_batch] = &g;
  }
  std::string o =
      "\nFinal test accuracy (%, mean ± ½ range over seeds) by data set and global "
      "batch:\n\n| data |";
  for (int b : batches) o += format(" batch %d |", b);
  o += "\n|---|";
  for (std::size_t k = 0; k < batches.size(); ++k) o += "---|";
  o += "\n";
  for (const char* d : {"full", "filtered", "random"}) {
    if (!cells.count(d)) continue;
    o += std::string("| ") + d + " |";
    for (int b : batches) {
      const auto it = cells[d].find(b);
      cell(o, it == cells[d].end() ? std::string("-") : mean_spread(*it->second));
    }
    o += "\n";
  }
  for (const auto& [a, z] : {std::pair{"filtered", "full"}, {"filtered", "random"}}) {
    if (!cells.count(a) || !cells.count(z)) continue;
    o += std::string("| ") + a + " − " + z + " (points) |";
    for (int b : batches) {
      const auto ia = cells[a].find(b), iz = cells[z].find(b);
      o += ia == cells[a].end() || iz == cells[z].end()
               ? " - |"
               : format(" %+.2f |",
                        100 * (final_stats(*ia->second).mean - final_stats(*iz->second).mean));
    }
    o += "\n";
  }
  return o;
}

struct RecordOptions {
  std::string study, data = "full", summary, metrics, out;
  double wall_s = 0;
  std::vector<std::string> args;  // the job's dbs-agent arguments
};

struct ReportOptions {
  std::string in, html;
  std::vector<int> at_epochs = {2, 5, 10};
};

int run_record(const RecordOptions& o) {
  const std::string line =
      study_record(o.study, o.data, o.summary, o.metrics, o.wall_s, o.args) + "\n";
  std::FILE* f = std::fopen(o.out.c_str(), "a");
  if (!f) throw InputError(o.out + ": cannot open for appending");
  const bool ok = std::fwrite(line.data(), 1, line.size(), f) == line.size();
  if (std::fclose(f) != 0 || !ok) throw InputError(o.out + ": write failed");
  return 0;
}

int run_report(const ReportOptions& o) {
  const std::vector<StudyRun> runs = read_study(o.in);
  const std::vector<Group> groups = group_runs(runs);
  int epochs = 0;
  for (const StudyRun& r : runs) epochs = std::max(epochs, static_cast<int>(r.epochs.size()));
  std::vector<int> at;
  for (int e : o.at_epochs)
    if (e >= 1 && e < epochs) at.push_back(e);
  std::string out = runs_table(groups, at);
  out += runs.front().study == "recipe" ? recipe_pivot(groups) : filtering_pivot(groups);
  std::fputs(out.c_str(), stdout);
  if (!o.html.empty()) write_file_atomic(o.html, study_html(runs, o.in));
  return 0;
}

}  // namespace

void add_study_command(CLI::App& app, cli::Action& action) {
  auto* study = app.add_subcommand(
      "study",
      "the training studies of lab/experiments/{recipe,filtering}.sh: record one finished\n"
      "job as a JSONL record, or report a file of records as tables and an HTML page.");
  study->require_subcommand(1);

  auto rec = std::make_shared<RecordOptions>();
  auto* r = cli::add_command(
      *study, action, "record",
      "append one job's record (config, per-epoch test accuracy and lr, final accuracy, wall s)\n"
      "to --out, from its --summary and --metrics (JSONL) and its dbs-agent arguments after --.\n"
      "Example: dbs-lab study record --study recipe --summary s.json --metrics m.jsonl "
      "--wall-s 61.2 --out recipe.jsonl -- --batch 8192 --lr-scaling linear --warmup-epochs 2",
      rec, run_record);
  r->add_option("--study", rec->study, "recipe or filtering")
      ->required()
      ->check(CLI::IsMember({"recipe", "filtering"}));
  r->add_option("--data", rec->data, "training data: full, filtered or random")
      ->check(CLI::IsMember({"full", "filtered", "random"}))
      ->capture_default_str();
  r->add_option("--summary", rec->summary, "the job's dbs-agent --summary")->required();
  r->add_option("--metrics", rec->metrics, "the job's dbs-agent --metrics (.jsonl)")->required();
  r->add_option("--wall-s", rec->wall_s, "the job's wall time, seconds")
      ->required()
      ->check(cli::at_least(0));
  r->add_option("--out", rec->out, "append the record to this JSONL file")->required();
  r->add_option("args", rec->args, "the job's dbs-agent arguments (after --)");

  auto rep = std::make_shared<ReportOptions>();
  auto* p = cli::add_command(
      *study, action, "report",
      "print the study's tables (Markdown) and write its page: test accuracy against epoch per\n"
      "configuration (mean of the seeds, their range shaded); for filtering, final accuracy\n"
      "against batch per data set.\n"
      "Example: dbs-lab study report --in docs/results/recipe.jsonl --html recipe.html",
      rep, run_report);
  p->add_option("--in", rep->in, "the records (JSONL, one study)")->required();
  p->add_option("--html", rep->html, "write the page here");
  p->add_option("--at-epochs", rep->at_epochs, "also tabulate the accuracy after these epochs")
      ->delimiter(',')
      ->capture_default_str();
}

}  // namespace dbs::lab
