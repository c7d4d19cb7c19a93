// dbs-scheduler serve's options: one struct, parsed once (command.cpp).
#pragma once

#include <cstddef>
#include <string>

namespace dbs::scheduler {

struct ServeOptions {
  std::string listen = "127.0.0.1:7070";  // agents connect here (ADDR:PORT; port 0 = any)
  std::string http;                       // /metrics, /status and / here; empty = no HTTP
  std::string token_file;                 // job token; empty = no authentication, loopback only
  std::string auth = "token";             // what registers present: token | munge | token,munge
  std::string munge_socket;               // munged's socket; empty = munge's default
  std::string tls_cert;                   // PEM certificate chain: both ports speak TLS; "" = plain
  std::string tls_key;                    // PEM private key of tls_cert
  std::string state_dir;                  // journal and traces; empty = in memory only
  std::size_t keep_finished = 0;          // finished jobs whose traces are kept; 0 = all
  double retention_s = 0;                 // seconds finished traces and quarantined files are
                                          // kept; 0 = forever
  std::string ready_file;                 // write the bound addresses here (JSON) once listening
  double report_timeout_s = 5;            // plan an epoch this long after its first report
                                          // (below the agents' --scheduler-timeout, 10 s)
  double abandon_after_s = 86400;         // finish a running job no rank was connected to this long
  double lost_after_s = 120;              // mark a job lost when no rank is connected this long
                                          // after its running epoch was due to end
  double idle_timeout_s = 120;            // drop a registered agent silent this long
  double hello_timeout_s = 10;            // a new connection must register within this
  double line_timeout_s = 10;             // an unfinished message must complete within this
  std::size_t max_connections = 10000;    // agent connections at once
  std::size_t max_jobs = 1000;            // running jobs at once
  std::size_t max_message = 1 << 20;      // bytes per message
  std::size_t max_queued = 256u << 20;    // bytes waiting to be sent, over all connections
  int max_world = 65536;                  // ranks per job
  std::string log_level = "info";         // debug | info | warning | error
  bool handle_signals = true;             // stop on SIGINT/SIGTERM (off for in-process use)
  bool http_trust_loopback = false;       // loopback HTTP clients see job ids, worlds and hosts
                                          // without the bearer token (off: only token holders)
};

}  // namespace dbs::scheduler
