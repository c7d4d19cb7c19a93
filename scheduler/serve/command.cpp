// `dbs-scheduler serve`: options, then the daemon until SIGINT/SIGTERM.
#include "scheduler/command.h"

#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>

#include "lib/common/error.h"
#include "lib/common/log.h"
#include "lib/net/job_key.h"
#include "lib/net/token.h"
#include "scheduler/serve/backup.h"
#include "scheduler/serve/daemon.h"

namespace dbs::scheduler {
namespace {

// A number > 0 (CLI::PositiveNumber names the range up to DBL_MAX in full, 300 digits).
const CLI::Validator kPositive(
    [](std::string& text) {
      double v = 0;
      try {
        std::size_t used = 0;
        v = std::stod(text, &used);
        if (used != text.size()) return "'" + text + "' is not a number";
      } catch (const std::out_of_range&) {
        return "'" + text + "' is out of range";
      } catch (const std::exception&) {
        return "'" + text + "' is not a number";
      }
      return v > 0 ? std::string() : "must be > 0, got " + text;
    },
    "POSITIVE");

// A duration >= 0: a number of seconds with an optional unit s, m, h or d ("30d"); the text
// becomes the seconds.
const CLI::Validator kDuration(
    [](std::string& text) {
      static const std::map<std::string, double> units = {
          {"", 1}, {"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}};
      std::size_t used = 0;
      double v = -1;
      try {
        v = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      const auto unit = units.find(text.substr(used));
      if (used == 0 || unit == units.end() || !(v >= 0) || v * unit->second > 1e12)
        return "'" + text + "' is not a duration >= 0 (a number with s, m, h or d, e.g. 30d)";
      text = std::to_string(v * unit->second);
      return std::string();
    },
    "DURATION");

int serve(const ServeOptions& o) {
  log::set_level(log::parse_level(o.log_level));
  log::set_tag("dbs-scheduler");
  Daemon daemon(o);
  return daemon.run();
}

}  // namespace

void add_serve_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ServeOptions>();
  auto* cmd = cli::add_command(
      app, action, "serve",
      "the planning daemon on the head node: agents register and report each epoch, it plans\n"
      "with the same policy code the agents embed, journals every epoch and serves metrics.\n"
      "Example: dbs-scheduler serve --listen 0.0.0.0:7070 --http 127.0.0.1:7071 \\\n"
      "           --token-file /etc/dbs/token --state-dir /var/lib/dbs-scheduler \\\n"
      "           --keep-finished 1000 --retention 30d",
      o, serve);
  cmd->add_option("--listen", o->listen, "ADDR:PORT agents connect to (port 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--http", o->http,
                  "ADDR:PORT for /metrics, /status and the page at / (default: none)");
  cmd->add_option("--token-file", o->token_file,
                  "job token, a file only its owner may read (default: none, loopback only)")
      ->envname("DBS_TOKEN_FILE");
  cmd->add_option("--auth", o->auth,
                  "what agents present: token (the token or a job key), munge (a munge "
                  "credential: the job belongs to its uid, no token needed) or token,munge; the "
                  "token opens the full HTTP view in every mode")
      ->capture_default_str()
      ->check(CLI::IsMember({"token", "munge", "token,munge", "munge,token"}));
  cmd->add_option("--munge-socket", o->munge_socket,
                  "munged's socket for --auth munge (default: munge's own, "
                  "/run/munge/munge.socket.2)")
      ->envname("MUNGE_SOCKET");
  cmd->add_option("--tls-cert", o->tls_cert,
                  "PEM certificate (chain) of this host: both ports speak TLS (default: none, "
                  "plain TCP and HTTP)");
  cmd->add_option("--tls-key", o->tls_key, "PEM private key of --tls-cert (needed with it)");
  cmd->add_flag("--http-trust-loopback", o->http_trust_loopback,
                "HTTP clients on a loopback address see job ids, worlds and hosts without the "
                "bearer token, as token holders do (default: only token holders; anyone with a "
                "shell on this host is trusted then)");
  cmd->add_option("--state-dir", o->state_dir,
                  "journal and traces here; a restart continues from it (default: in memory)");
  cmd->add_option("--keep-finished", o->keep_finished,
                  "finished jobs whose traces stay in STATE_DIR/traces (and on the page, at most "
                  "100): the oldest past it are removed at once; 0 keeps all")
      ->capture_default_str();
  cmd->add_option("--retention", o->retention_s,
                  "how long a finished job's trace and a quarantined file are kept, as seconds or "
                  "with a unit (90m, 12h, 30d); 0 keeps them forever")
      ->capture_default_str()
      ->transform(kDuration);
  cmd->add_option("--report-timeout", o->report_timeout_s,
                  "seconds after an epoch's first report to plan without the missing ranks")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--abandon-after", o->abandon_after_s,
                  "seconds after which a running job with no rank connected is finished")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--lost-after", o->lost_after_s,
                  "seconds after its running epoch was due (plan sent + predicted epoch time) that "
                  "a job with no rank connected is shown as lost; it runs again when a rank "
                  "reconnects")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--idle-timeout", o->idle_timeout_s, "seconds a registered agent may stay silent")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--hello-timeout", o->hello_timeout_s, "seconds a new connection has to register")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--line-timeout", o->line_timeout_s, "seconds to finish a started message")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--max-connections", o->max_connections, "agent connections at once")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--max-jobs", o->max_jobs, "running jobs at once")
      ->capture_default_str()
      ->check(kPositive);
  cmd->add_option("--max-message", o->max_message, "bytes per message")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 30));
  cmd->add_option("--max-queued", o->max_queued,
                  "bytes waiting to be sent over all connections; a peer that would pass it is "
                  "dropped")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1} << 20, std::size_t{1} << 40));
  cmd->add_option("--max-world", o->max_world, "ranks per job")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--ready-file", o->ready_file,
                  "once listening, write {\"listen\", \"http\", \"pid\"} here as JSON");
  cmd->add_option("--log-level", o->log_level, "debug, info, warning or error")
      ->capture_default_str()
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}));
}

void add_job_key_command(CLI::App& app, Action& action) {
  struct Args {
    std::string token_file, job;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = cli::add_command(
      app, action, "job-key",
      "print the key of a job: its ranks present it instead of the daemon token, which opens\n"
      "every job (a key opens its own job only). Example, in a job script that can read the\n"
      "token:\n"
      "  (umask 077; dbs-scheduler job-key --token-file /etc/dbs/token $JOB > key)\n"
      "  dbs-agent --scheduler head:7070 --job $JOB --token-file key ...",
      a, [](const Args& args) {
        std::printf("%s\n", net::job_key(net::read_token_file(args.token_file), args.job).c_str());
        return 0;
      });
  cmd->add_option("--token-file", a->token_file,
                  "the daemon token (a file only its owner may read)")
      ->envname("DBS_TOKEN_FILE")
      ->required();
  cmd->add_option("job", a->job, "the job id")->required();
}

void add_backup_command(CLI::App& app, Action& action) {
  struct Args {
    std::string state_dir, out;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = cli::add_command(
      app, action, "backup",
      "copy a state directory into one tar file, while the daemon runs or not: the journal's\n"
      "whole lines, the finished jobs' traces and the quarantined files (the traces of jobs\n"
      "still in the journal are rewritten from it by the daemon that starts on the restore).\n"
      "Example: dbs-scheduler backup --state-dir /var/lib/dbs-scheduler --out /backup/dbs.tar",
      a, [](const Args& args) {
        const BackupSummary s = backup_state(args.state_dir, args.out);
        std::printf(
            "%s: journal version %d, %zu records (%zu jobs whose traces are rewritten "
            "from it), %zu finished traces, %zu quarantined files\n",
            args.out.c_str(), s.journal_version, s.records, s.rewritten, s.traces, s.quarantined);
        return 0;
      });
  cmd->add_option("--state-dir", a->state_dir, "the daemon's --state-dir")->required();
  cmd->add_option("--out", a->out, "the tar file to write (replaced atomically)")->required();
}

void add_restore_command(CLI::App& app, Action& action) {
  struct Args {
    std::string from, state_dir;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = cli::add_command(
      app, action, "restore",
      "write a backup into a new or empty state directory, checking the whole archive first;\n"
      "then start the daemon on it (it rewrites the running jobs' traces from the journal).\n"
      "Example: dbs-scheduler restore --from /backup/dbs.tar --state-dir /var/lib/dbs-new",
      a, [](const Args& args) {
        const BackupSummary s = restore_state(args.from, args.state_dir);
        std::printf(
            "%s: restored from %s: journal version %d, %zu records, %zu finished traces, "
            "%zu quarantined files\n",
            args.state_dir.c_str(), args.from.c_str(), s.journal_version, s.records, s.traces,
            s.quarantined);
        return 0;
      });
  cmd->add_option("--from", a->from, "the backup (a tar file from dbs-scheduler backup)")
      ->required();
  cmd->add_option("--state-dir", a->state_dir, "the directory to create (absent or empty)")
      ->required();
}

}  // namespace dbs::scheduler
