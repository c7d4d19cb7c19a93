#include "lib/comm/mpi.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <span>
#include <vector>

#include "lib/comm/ring.h"
#include "lib/common/error.h"

namespace dbs::comm {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    throw CommError(std::string(call) + ": MPI error " + std::to_string(code));
  }
  throw CommError(std::string(call) + ": " + std::string(text, static_cast<std::size_t>(length)));
}

bool any_rank(bool mine) {
  int said = mine ? 1 : 0, any = 0;
  check_mpi(MPI_Allreduce(&said, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return any != 0;
}

int launched_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    const char* v = std::getenv(name);
    if (v == nullptr) continue;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end != v && *end == '\0' && n > 0 && n <= INT_MAX) return static_cast<int>(n);
  }
  return 0;
}

MpiRuntime::MpiRuntime(int* argc, char*** argv) {
  int initialized = 0;
  check_mpi(MPI_Initialized(&initialized), "MPI_Initialized");
  if (!initialized) {
    // Open MPI's non-blocking collectives (libnbc; what a sleeping rank and --overlap use). Its
    // allreduce picks a binomial tree for fewer than 4 ranks or in-place buffers: the root's link
    // carries 2 (p - 1) whole gradients. The ring carries 2 (p - 1) / p of one, in 2 (p - 1)
    // rounds; up to kRingRanks ranks that is the fastest. Beyond, each round waits for its
    // slowest rank, and Rabenseifner's reduce-scatter and allgather by recursive halving and
    // doubling moves about the ring's bytes in 2 log2 p rounds (one fold more each way where p
    // is not a power of two): 64 emulated ranks on 2 cores took 28 s an epoch against 33 s with
    // the ring. Its allgather (of more than kControlBytes a rank) is linear, p - 1 messages a
    // rank, unless recursive doubling is asked for (used where p is a power of two): log2 p
    // rounds. A control message's allgather is a gather and a broadcast
    // (allgather_bytes), the broadcast by a k-nomial tree of radix 8: at 256 ranks radix 8 and
    // 16 took 22 and 21 ms, 4 (Open MPI's default) 31 ms, binomial 36 ms, linear 37 ms. A value the
    // user set (environment, mpirun --mca) is kept; other MPIs ignore the variables.
    const int world = launched_world_size();
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", world > kRingRanks ? "3" : "1", 0);
    setenv("OMPI_MCA_coll_libnbc_iallgather_algorithm", "2", 0);
    setenv("OMPI_MCA_coll_libnbc_ibcast_algorithm", "4", 0);
    setenv("OMPI_MCA_coll_libnbc_ibcast_knomial_radix", "8", 0);
    // Over TCP a message above the eager limit (64 KiB) waits for the receiver's go-ahead, which
    // travels in the same stream as the receiver's own outgoing data: in an exchange, where both
    // ends send at once, it arrives only after that data has drained, which stalls every step
    // of a ring. Sent eagerly, the messages of the exchanges (the ring's
    // chunks of kRingChunkBytes, libnbc's segments of the gradient) need no go-ahead. Kept where
    // the user set it, as above.
    setenv("OMPI_MCA_btl_tcp_eager_limit", "4194304", 0);
    int provided = 0;
    check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    owns_ = true;
    if (provided < MPI_THREAD_FUNNELED) {
      MPI_Finalize();
      throw CommError("MPI_Init_thread: the MPI library does not provide MPI_THREAD_FUNNELED");
    }
  }
  check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
}

MpiRuntime::~MpiRuntime() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

Algorithm parse_algorithm(const std::string& name) {
  if (name == "mpi") return Algorithm::mpi;
  if (name == "ring") return Algorithm::ring;
  throw ConfigError("unknown allreduce algorithm '" + name + "' (expected mpi|ring)");
}

const char* to_string(Algorithm algorithm) {
  return algorithm == Algorithm::ring ? "ring" : "mpi";
}

namespace {

// MPI counts are int: larger buffers go in pieces of at most INT_MAX elements.
constexpr std::size_t max_count = INT_MAX;

int as_int(std::size_t n) {
  return static_cast<int>(n);
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(Algorithm algorithm, Wait wait) : algorithm_(algorithm), requested_(wait) {
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    choose_wait(1);
  }

  void set_threads(int threads) override { choose_wait(threads); }
  std::string waiting() const override { return waiting_; }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce_sum(std::span<float> data) override {
    arrive();
    if (algorithm_ == Algorithm::ring) {
      ring_allreduce_sum(MPI_COMM_WORLD, data.data(), data.size(), kRingChunkBytes, wait_);
    } else {
      reduce(data.data(), data.size(), MPI_FLOAT);
    }
  }

  void allreduce_sum(std::span<double> data) override {
    arrive();
    reduce(data.data(), data.size(), MPI_DOUBLE);
  }

  // MPI with no rank asleep: MPI_Reduce_scatter into scratch (its in-place form puts the result
  // at the buffer's start), then copied to the segment. ring, or any rank asleep: the ring's first
  // half over these segments, its waits as wait_ says. Not MPI's collectives when a rank sleeps:
  // the blocking ones spin through the transfer (a quota-limited rank spends its CPU there), and
  // Open MPI's non-blocking reduce-scatter reduces the whole buffer to one root and scatters it,
  // sending the whole gradient through one rank's link.
  void reduce_scatter_sum(std::span<float> data, std::span<const std::size_t> counts) override {
    check_segments(data.size(), counts, size_);
    arrive();
    if (algorithm_ == Algorithm::ring || arrive_first_) {
      ring_reduce_scatter_sum(MPI_COMM_WORLD, data.data(), counts, kRingChunkBytes, wait_);
      return;
    }
    const std::vector<int> n = int_counts(counts), at = displacements(n);
    std::vector<float>& mine = scratch_;
    mine.resize(counts[static_cast<std::size_t>(rank_)]);
    check_mpi(
        MPI_Reduce_scatter(data.data(), mine.data(), n.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Reduce_scatter");
    std::copy(mine.begin(), mine.end(), data.begin() + at[static_cast<std::size_t>(rank_)]);
  }

  void allgather_segments(std::span<float> data, std::span<const std::size_t> counts) override {
    check_segments(data.size(), counts, size_);
    arrive();
    if (algorithm_ == Algorithm::ring || arrive_first_) {  // as reduce_scatter_sum
      ring_allgather(MPI_COMM_WORLD, data.data(), counts, kRingChunkBytes, wait_);
      return;
    }
    const std::vector<int> n = int_counts(counts), at = displacements(n);
    check_mpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data.data(), n.data(), at.data(),
                             MPI_FLOAT, MPI_COMM_WORLD),
              "MPI_Allgatherv");
  }

  // MPI_Iallreduce whatever the algorithm (the ring is blocking; the trainer refuses --overlap
  // with it), waited for in finish() as wait_ says.
  void start_allreduce_sum(std::span<float> data) override {
    if (data.size() > max_count) throw CommError("start_allreduce_sum: more than INT_MAX elements");
    pending_.push_back(MPI_REQUEST_NULL);
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, data.data(), as_int(data.size()), MPI_FLOAT, MPI_SUM,
                             MPI_COMM_WORLD, &pending_.back()),
              "MPI_Iallreduce");
  }

  void progress() override {
    if (pending_.empty()) return;
    int done = 0;
    check_mpi(
        MPI_Testall(static_cast<int>(pending_.size()), pending_.data(), &done, MPI_STATUSES_IGNORE),
        "MPI_Testall");
  }

  // With a rank asleep, the allreduces started are waited for as every collective is: a
  // barrier first (started after them on every rank, so it completes once every rank has
  // started them all; polling it also moves them), then the data polled without sleeps for up
  // to kDataSpin. Polled with sleeps of up to kMaxSleep from the start, each of libnbc's rounds
  // waited for a poll: the cnn's gradient took 1.24 ms instead of 0.52 ms over shared memory.
  void finish() override {
    if (pending_.empty()) return;
    arrive(kDataSpin);
    await_all(pending_, wait_, kDataSleep, kDataSpin);
    pending_.clear();
  }

  void allgather_bytes(const void* in, std::size_t bytes, void* out) override {
    if (bytes > max_count) throw CommError("allgather_bytes: more than INT_MAX bytes per rank");
    if (arrive_first_ && bytes <= kControlBytes) {
      // A control message (the epoch end's reports, the planner's words): no barrier before it.
      // Gathered to rank 0 (each rank sends once) and broadcast by a k-nomial tree (MpiRuntime),
      // where each rank waits once, for its parent: a sleeping rank pays a wake-up per round it
      // waits in, and recursive doubling's allgather has log2 p rounds for every rank. 320 bytes
      // a rank among 256 sleeping processes on 2 cores, arrivals aligned: 22-31 ms against
      // 65 ms (64 ranks: 4 ms against 8 ms); at the end of an emulated epoch of 256 ranks, rank
      // 0 left it 30-75 ms after the last rank arrived, against 86-173 ms.
      MPI_Request request = MPI_REQUEST_NULL;
      check_mpi(MPI_Igather(in, as_int(bytes), MPI_BYTE, out, as_int(bytes), MPI_BYTE, 0,
                            MPI_COMM_WORLD, &request),
                "MPI_Igather");
      await(request, wait_, kMaxSleep, kArriveSpin);
      check_mpi(MPI_Ibcast(out, as_int(bytes * static_cast<std::size_t>(size_)), MPI_BYTE, 0,
                           MPI_COMM_WORLD, &request),
                "MPI_Ibcast");
      await(request, wait_, kMaxSleep, kArriveSpin);
      return;
    }
    arrive();
    collective(
        "MPI_Allgather",
        [&] {
          return MPI_Allgather(in, as_int(bytes), MPI_BYTE, out, as_int(bytes), MPI_BYTE,
                               MPI_COMM_WORLD);
        },
        [&](MPI_Request* r) {
          return MPI_Iallgather(in, as_int(bytes), MPI_BYTE, out, as_int(bytes), MPI_BYTE,
                                MPI_COMM_WORLD, r);
        });
  }

  void broadcast_bytes(void* data, std::size_t bytes, int root) override {
    auto* p = static_cast<unsigned char*>(data);
    arrive();
    for (std::size_t done = 0; done < bytes;) {
      const std::size_t n = std::min(bytes - done, max_count);
      collective(
          "MPI_Bcast",
          [&] { return MPI_Bcast(p + done, as_int(n), MPI_BYTE, root, MPI_COMM_WORLD); },
          [&](MPI_Request* r) {
            return MPI_Ibcast(p + done, as_int(n), MPI_BYTE, root, MPI_COMM_WORLD, r);
          });
      done += n;
    }
  }

  void barrier() override {
    if (arrive_first_) {
      arrive();
    } else {
      check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    }
  }

  void abort(int code) noexcept override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

  std::string host() const override {
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    if (MPI_Get_processor_name(name, &length) != MPI_SUCCESS) return Communicator::host();
    return std::string(name, static_cast<std::size_t>(length));
  }

 private:
  // Resolves the wait mode for `threads` threads; the ranks agree whether any of them sleeps.
  void choose_wait(int threads) {
    const WaitChoice choice = resolve_wait(requested_, threads);
    wait_ = choice.wait;
    waiting_ = std::string(to_string(wait_)) + " (" + choice.why + ")";
    arrive_first_ = any_rank(wait_ == Wait::sleep) && size_ > 1;
  }

  // One collective's data movement (after arrive()): its blocking form when no rank sleeps;
  // else its non-blocking form on every rank (blocking and non-blocking collectives do not
  // match), which a sleeping rank polls without sleeps for up to kDataSpin (everyone is there:
  // a transfer over shared memory is done by then) and then with sleeps of at most kDataSleep
  // instead of spinning through a long transfer, and a spinning rank waits for with MPI_Wait.
  template <typename Blocking, typename Start>
  void collective(const char* name, Blocking blocking, Start start) {
    if (!arrive_first_) {
      check_mpi(blocking(), name);
      return;
    }
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(start(&request), name);
    await(request, wait_, kDataSleep, kDataSpin);
  }

  // With a sleeping rank in the job: every rank joins a non-blocking barrier and waits for it
  // as wait_ says, so the collective that follows finds everyone there.
  void arrive(std::chrono::microseconds spin_first = kArriveSpin) {
    if (!arrive_first_) return;
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &request), "MPI_Ibarrier");
    await(request, wait_, kMaxSleep, spin_first);
  }

  // MPI's counts and displacements are int: a buffer of INT_MAX elements or more is refused.
  static std::vector<int> int_counts(std::span<const std::size_t> counts) {
    std::size_t total = 0;
    for (const std::size_t c : counts) total += c;
    if (total > max_count) throw CommError("sharded collective: more than INT_MAX elements");
    return {counts.begin(), counts.end()};
  }
  static std::vector<int> displacements(const std::vector<int>& counts) {
    std::vector<int> at(counts.size(), 0);
    for (std::size_t r = 1; r < counts.size(); ++r) at[r] = at[r - 1] + counts[r - 1];
    return at;
  }

  template <typename T>
  void reduce(T* data, std::size_t count, MPI_Datatype type) {
    for (std::size_t done = 0; done < count;) {
      const std::size_t n = std::min(count - done, max_count);
      collective(
          "MPI_Allreduce",
          [&] {
            return MPI_Allreduce(MPI_IN_PLACE, data + done, as_int(n), type, MPI_SUM,
                                 MPI_COMM_WORLD);
          },
          [&](MPI_Request* r) {
            return MPI_Iallreduce(MPI_IN_PLACE, data + done, as_int(n), type, MPI_SUM,
                                  MPI_COMM_WORLD, r);
          });
      done += n;
    }
  }

  Algorithm algorithm_;
  Wait requested_;             // as given (automatic: resolved by quota and threads)
  Wait wait_ = Wait::spin;     // spin or sleep (resolved)
  std::string waiting_;        // wait_ and why, for waiting()
  bool arrive_first_ = false;  // some rank sleeps: barrier before every collective
  int rank_ = 0;
  int size_ = 1;
  std::vector<float> scratch_;        // this rank's reduce-scatter result
  std::vector<MPI_Request> pending_;  // started allreduces (MPI_REQUEST_NULL once done)
};

}  // namespace

std::unique_ptr<Communicator> make_mpi(Algorithm algorithm, Wait wait) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw CheckError("make_mpi: MPI is not initialised (create an MpiRuntime)");
  return std::make_unique<MpiCommunicator>(algorithm, wait);
}

}  // namespace dbs::comm
