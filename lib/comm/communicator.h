// The communicator of a training job: rank, size, and the few collectives dbs needs.
// Implementations: MPI (lib/comm/mpi.h), in-process threads for tests (lib/comm/local.h), and a
// world of one (make_single). Every collective must be called by all ranks in the same order.
// A failure throws CommError; the job cannot go on after one.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dbs::comm {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In place: data[i] = sum over ranks of data[i]. Same length on every rank.
  virtual void allreduce_sum(std::span<float> data) = 0;
  virtual void allreduce_sum(std::span<double> data) = 0;
  // The two halves of an allreduce, for an update sharded across ranks. counts (size() entries,
  // summing to data.size(), the same everywhere) cut data into consecutive segments, rank r's
  // at offset counts[0] + ... + counts[r-1]; a segment may be empty.
  // reduce_scatter_sum: this rank's segment becomes the sum over ranks of that segment; the
  // rest of data is left unspecified.
  virtual void reduce_scatter_sum(std::span<float> data, std::span<const std::size_t> counts) = 0;
  // allgather_segments: every rank's segment, as its owner holds it, is copied into every rank's
  // data. reduce_scatter_sum then allgather_segments is an allreduce_sum.
  virtual void allgather_segments(std::span<float> data, std::span<const std::size_t> counts) = 0;
  // A non-blocking float allreduce, to overlap the gradient exchange with the backward pass:
  // start_allreduce_sum returns at once and data must stay untouched until finish(), which
  // returns when every started one is done; progress() lets pending ones move (MPI moves them
  // only inside MPI calls). Every rank starts the same lengths in the same order, and calls no
  // other collective between its first start and finish(). Here (in-process, single): the sum
  // is done at start.
  virtual void start_allreduce_sum(std::span<float> data) { allreduce_sum(data); }
  virtual void progress() {}
  virtual void finish() {}
  // Every rank contributes `bytes` bytes; out (size() * bytes) gets rank r's at r * bytes.
  virtual void allgather_bytes(const void* in, std::size_t bytes, void* out) = 0;
  // data (bytes, same count everywhere) is replaced by root's.
  virtual void broadcast_bytes(void* data, std::size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  // Tells the communicator this rank's thread count, once it is known, so that --wait auto
  // (lib/comm/wait.h) can decide by it. A collective. No-op where waiting is not chosen.
  virtual void set_threads(int /*threads*/) {}
  // How this rank waits in collectives and why ("sleep (auto: ...)"), for its log line; empty
  // where waiting is not chosen.
  virtual std::string waiting() const { return {}; }
  // Ends the whole job as fast as possible (MPI_Abort); never returns for MPI.
  virtual void abort(int code) noexcept = 0;
  // Host name of this rank (for traces and logs).
  virtual std::string host() const;
};

// The ranks that share this rank's host (the same host()), the TBB threads they run in total,
// and the cores they may run on: the union of their CPU affinity masks (a launcher's binding or
// a batch system's cpuset), the host's online cores where a mask cannot be read. A collective:
// every rank gives its own thread count.
struct HostShare {
  int ranks = 1;    // this rank included
  int threads = 0;  // the sum of their thread counts
  int cores = 1;
  int first = 0;  // the lowest rank on the host
  // More threads than cores: a rank that spins while it waits takes a core another rank's
  // thread would compute on.
  bool oversubscribed() const { return threads > cores; }
};
HostShare host_share(Communicator& comm, int threads);

// Every rank's text (at most 127 bytes of it), in rank order. A collective.
std::vector<std::string> gather_strings(Communicator& comm, const std::string& text);

// Throws CheckError unless counts has `world` entries summing to `length`.
void check_segments(std::size_t length, std::span<const std::size_t> counts, int world);

// A world of one rank: collectives are identities.
std::unique_ptr<Communicator> make_single();

}  // namespace dbs::comm
